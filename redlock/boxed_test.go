package redlock

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The arguments boxed once for the go-redis nodes of a round are the command's, in order, for
// every sort of command: SET NX, a script whose arguments repeat a key (boxed once), and one
// with more arguments than boxed holds in place.
func TestBoxedArgsAreTheCommands(t *testing.T) {
	rc := redis.NewClient(&redis.Options{})
	defer rc.Close()
	c, err := New([]redis.UniversalClient{rc})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	many := make([]string, 12)
	for i := range many {
		many[i] = fmt.Sprint("k", i)
	}
	multi, err := c.multi(many)
	if err != nil {
		t.Fatal(err)
	}
	m := c.mutex("k")
	a := attempt{token: "tok", ttl: 8 * time.Second}
	w := attempt{token: "tok", ttl: 8 * time.Second, waiter: "id.1", place: 7, lease: time.Second}
	for name, cmd := range map[string]command{
		"set":     m.ops.acquire(a),
		"waiter":  m.ops.acquire(w),
		"release": m.ops.release("tok", "chan", "id.1"),
		"multi":   multi.ops.acquire(a),
	} {
		t.Run(name, func(t *testing.T) {
			b := cmd.box.of(cmd)
			if cmd.script == nil {
				want := []any{"set", cmd.keys[0], cmd.args[0], "px", int64(8000), "nx"}
				if !reflect.DeepEqual(b.set, want) {
					t.Fatalf("SET's arguments %v, want %v", b.set, want)
				}
				return
			}
			want := []any{"evalsha", cmd.script.SHA1(), len(cmd.keys)}
			for _, s := range append(append([]string{}, cmd.keys...), cmd.args...) {
				want = append(want, s)
			}
			if !reflect.DeepEqual(b.evalsha, want) {
				t.Fatalf("EVALSHA's arguments %v, want %v", b.evalsha, want)
			}
		})
	}
}
