package redlockvalkey_test

import (
	"os/exec"
	"testing"
)

// node.go and batch.go are generated from redlockrueidis's, and stay so: change those files,
// then run go generate here.
func TestNodeIsGeneratedFromTheRueidisNode(t *testing.T) {
	out, err := exec.Command("go", "run", "./internal/twin", "-check").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}
