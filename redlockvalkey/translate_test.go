package redlockvalkey_test

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite node.go from ../redlockrueidis/node.go")

// translate turns redlockrueidis's node.go into this module's: valkey-go is a fork of rueidis
// with the same API under other names, so that one implementation serves both.
var translate = strings.NewReplacer(
	"redlockrueidis", "redlockvalkey",
	`"github.com/redis/rueidis"`, `"github.com/valkey-io/valkey-go"`,
	"rueidis.IsRedisErr", "valkey.IsValkeyErr",
	"rueidis.IsRedisNil", "valkey.IsValkeyNil",
	"rueidis.", "valkey.",
	"rueidis", "valkey-go",
)

// node.go is redlockrueidis's node.go translated, and stays so: change that file, then run
// go test -run TestNodeIsTheRueidisNodeTranslated -update here.
func TestNodeIsTheRueidisNodeTranslated(t *testing.T) {
	src, err := os.ReadFile("../redlockrueidis/node.go")
	if err != nil {
		t.Fatalf("this test runs in the repository, beside redlockrueidis: %v", err)
	}
	want := translate.Replace(string(src))
	if *update {
		if err := os.WriteFile("node.go", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("node.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatal("node.go is not redlockrueidis's node.go translated: edit that file and run this test with -update")
	}
}
