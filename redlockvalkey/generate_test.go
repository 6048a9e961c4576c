package redlockvalkey_test

import (
	"os/exec"
	"testing"
)

// node.go is generated from redlockrueidis's node.go, and stays so: change that file, then run
// go generate here.
func TestNodeIsGeneratedFromTheRueidisNode(t *testing.T) {
	out, err := exec.Command("go", "run", "./internal/twin", "-check").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}
