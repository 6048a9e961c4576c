package wire_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/quorumlock/redlock/internal/keyslot"
	"github.com/quorumlock/redlock/internal/wire"
)

func TestCompanion(t *testing.T) {
	for _, tc := range []struct{ prefix, key, want string }{
		{"", "orders", "~redlock:queue:{orders}orders"},
		{"app:", "orders", "app:~redlock:queue:{app:orders}orders"},
		{"", "{user:7}:profile", "~redlock:queue:{user:7}{user:7}:profile"},
		{"", "a{b}c{d}", "~redlock:queue:{b}a{b}c{d}"},
		{"pre:", "{tenant}:k", "pre:~redlock:queue:{tenant}{tenant}:k"},
		{"{tenant}:", "k", "{tenant}:~redlock:queue:k"},
		{"", "a{b", "~redlock:queue:{a{b}a{b"},
		{"", "a}b", "~redlock:queue:{4w2}a}b"},
		{"", "x{}y{z}", "~redlock:queue:{5t6}x{}y{z}"},
		{"a}b:", "k", "~redlock:queue:{" + keyslot.Tag(keyslot.Of("a}b:k")) + "}k"},
	} {
		names, err := wire.NewNames(tc.prefix)
		if err != nil {
			t.Fatal(err)
		}
		want := tc.want
		if tc.prefix == "a}b:" {
			want = tc.prefix + want
		}
		if got := names.Companion("queue", tc.key); got != want {
			t.Errorf("prefix %q: Companion(queue, %q) = %q, want %q", tc.prefix, tc.key, got, want)
		}
		checkCompanion(t, tc.prefix, tc.key)
	}
}

func TestNewNamesRefusesAnOpenTag(t *testing.T) {
	for _, prefix := range []string{"{", "a{", "x{}", "{}y", "a{b"} {
		if _, err := wire.NewNames(prefix); err == nil {
			t.Errorf("prefix %q accepted", prefix)
		}
	}
	for _, prefix := range []string{"", "app:", "a}b", "{t}", "x{y}{", "}{z}"} {
		if _, err := wire.NewNames(prefix); err != nil {
			t.Errorf("prefix %q: %v", prefix, err)
		}
	}
}

func TestCheckKey(t *testing.T) {
	for _, key := range []string{"", "~redlock:queue:{k}k", wire.Reserved} {
		if wire.CheckKey(key) == nil {
			t.Errorf("key %q accepted", key)
		}
	}
	for _, key := range []string{"k", "~redlock", "a~redlock:", "redlock:k"} {
		if err := wire.CheckKey(key); err != nil {
			t.Errorf("key %q: %v", key, err)
		}
	}
}

func FuzzCompanion(f *testing.F) {
	for _, k := range []string{"k", "{a}b", "a}b", "x{}y{z}", "{", "}", "{}", "{{}}", "a{b}}c"} {
		for _, p := range []string{"", "app:", "{t}:", "a}"} {
			f.Add(p, k)
		}
	}
	f.Fuzz(func(t *testing.T, prefix, key string) {
		if _, err := wire.NewNames(prefix); err != nil || wire.CheckKey(key) != nil {
			return
		}
		checkCompanion(t, prefix, key)
	})
}

// checkCompanion checks that key's companions are under the prefix, in the lock key's slot,
// name that key alone, and are no key a user can lock.
func checkCompanion(t *testing.T, prefix, key string) {
	t.Helper()
	names, err := wire.NewNames(prefix)
	if err != nil {
		t.Fatalf("prefix %q: %v", prefix, err)
	}
	stored := names.Key(key)
	for _, kind := range []string{"queue", "leases", "fence"} {
		name := names.Companion(kind, key)
		if keyslot.Of(name) != keyslot.Of(stored) {
			t.Errorf("prefix %q: Companion(%s, %q) = %q: slot %d, the key's %d", prefix, kind, key, name, keyslot.Of(name), keyslot.Of(stored))
		}
		rest, ok := strings.CutPrefix(name, prefix+wire.Reserved+kind+":")
		if !ok {
			t.Fatalf("prefix %q: Companion(%s, %q) = %q, not under the prefix and the reserved name", prefix, kind, key, name)
		}
		if wire.CheckKey(strings.TrimPrefix(name, prefix)) == nil {
			t.Errorf("prefix %q: a user may lock %q, the companion of %q", prefix, name, key)
		}
		// The name gives the key back: after the tag, or whole with a prefix that has one.
		back := rest
		if !names.Tagged() {
			back = rest[strings.IndexByte(rest, '}')+1:]
		}
		if back != key {
			t.Errorf("prefix %q: Companion(%s, %q) = %q does not name the key alone", prefix, kind, key, name)
		}
	}
}

// Every names every key that a method of Names gives for a name (Mutex, Unfenced, Election,
// Semaphore, RWMutex, and any added later), each once, under the prefix; and every kind of
// companion that the module's code names with Companion has a key among them: the doctor asks
// the ACL about Every's keys, so a key missing here would pass it and fail a lock with NOPERM.
func TestEveryNamesEveryKey(t *testing.T) {
	names, _ := wire.NewNames("app:")
	every := names.Every("k")
	seen := map[string]bool{}
	for _, name := range every {
		if seen[name] || !strings.HasPrefix(name, "app:") {
			t.Errorf("Every(k) names %q twice or outside the prefix: %q", name, every)
		}
		seen[name] = true
	}
	v := reflect.ValueOf(names)
	sets := 0
	for i := range v.NumMethod() {
		m, name := v.Method(i), v.Type().Method(i).Name
		typ := m.Type()
		if typ.NumIn() != 1 || typ.In(0).Kind() != reflect.String || typ.NumOut() != 1 || typ.Out(0).Kind() != reflect.Struct {
			continue
		}
		sets++
		for _, key := range stringsIn(m.Call([]reflect.Value{reflect.ValueOf("k")})[0]) {
			if key != "" && !seen[key] { // "": none, as Unfenced's fencing counter
				t.Errorf("%s(k) names %q, which Every(k) does not: %q", name, key, every)
			}
		}
	}
	if sets < 5 {
		t.Errorf("%d methods of Names give a set of keys, want Mutex, Unfenced, Election, Semaphore and RWMutex at least", sets)
	}
	for kind, file := range companionKinds(t) {
		if !slices.ContainsFunc(every, func(n string) bool { return strings.HasPrefix(n, "app:"+wire.Reserved+kind+":") }) {
			t.Errorf("%s names companions of kind %q, which Every(k) does not: %q", file, kind, every)
		}
	}
}

// stringsIn returns every string in v, a struct, however deep: in its fields, in structs and
// slices among them.
func stringsIn(v reflect.Value) []string {
	switch v.Kind() {
	case reflect.String:
		return []string{v.String()}
	case reflect.Struct:
		var all []string
		for i := range v.NumField() {
			all = append(all, stringsIn(v.Field(i))...)
		}
		return all
	case reflect.Slice, reflect.Array:
		var all []string
		for i := range v.Len() {
			all = append(all, stringsIn(v.Index(i))...)
		}
		return all
	}
	return nil
}

// companionKinds returns each kind that the module's Go code (tests aside) passes to Companion
// as a literal, and a file that does.
func companionKinds(t *testing.T) map[string]string {
	t.Helper()
	call := regexp.MustCompile(`\.Companion\("([^"]+)"`)
	kinds := map[string]string{}
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		for _, m := range call.FindAllStringSubmatch(string(src), -1) {
			kinds[m[1]] = path
		}
		return err
	})
	if err != nil || len(kinds) == 0 {
		t.Fatalf("no call of Companion found in the module: %v", err)
	}
	return kinds
}

// The doctor's write probe is under the prefix, of the queue's kind, and no lock's key.
func TestProbe(t *testing.T) {
	for _, prefix := range []string{"", "app:", "{t}:"} {
		names, _ := wire.NewNames(prefix)
		p := names.Probe()
		if !strings.HasPrefix(p, prefix+wire.Reserved+"queue:") || slices.Contains(names.Every("doctor"), p) {
			t.Errorf("prefix %q: Probe() = %q", prefix, p)
		}
	}
}
