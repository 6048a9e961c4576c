package goredisnode

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/redlock/driver"
)

// The arguments boxed once for the go-redis nodes of a round are the call's, in order, for
// every sort of call: SET NX, a script whose arguments repeat a key (boxed once), and one with
// more arguments than a Call holds in place.
func TestBoxedArgsAreTheCalls(t *testing.T) {
	many := make([]string, 14)
	for i := range many {
		many[i] = fmt.Sprint("k", i)
	}
	for name, call := range map[string]*driver.Call{
		"set":     {Keys: []string{"k"}, Args: []string{"tok"}, TTL: 8 * time.Second},
		"release": {Script: wire.ReleaseScript, Keys: []string{"k", "q", "l"}, Args: []string{"tok", "chan", "k", "id.1", ""}},
		"many":    {Script: wire.MultiAcquireScript, Keys: many, Args: []string{"tok", "8000"}},
	} {
		t.Run(name, func(t *testing.T) {
			got := boxedOf(call)
			if call.Script == nil {
				want := []any{"set", "k", "tok", "px", int64(8000), "nx"}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("SET's arguments %v, want %v", got, want)
				}
				return
			}
			want := []any{"evalsha", call.Script.SHA1(), len(call.Keys)}
			for _, s := range append(append([]string{}, call.Keys...), call.Args...) {
				want = append(want, s)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("EVALSHA's arguments %v, want %v", got, want)
			}
			if again := boxedOf(call); &again[0] != &got[0] {
				t.Fatal("boxed twice for one call")
			}
		})
	}
}
