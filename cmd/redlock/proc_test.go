package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// startWith is start with setup applied to the command before it starts. Its Wait gives up on
// the output a few seconds after redlock exec ended: a process that outlives it (what these
// tests look for) may hold the output open.
func startWith(t *testing.T, setup func(*exec.Cmd), env []string, args ...string) *proc {
	t.Helper()
	r := &proc{cmd: exec.Command(binary, args...), stdout: newLineBuffer(), stderr: newLineBuffer(), done: make(chan struct{})}
	r.cmd.Env = append(os.Environ(), env...)
	r.cmd.Stdout, r.cmd.Stderr = r.stdout, r.stderr
	r.cmd.WaitDelay = 5 * time.Second
	if setup != nil {
		setup(r.cmd)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.done)
		err := r.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			r.code = ee.ExitCode()
		case err != nil && !errors.Is(err, exec.ErrWaitDelay):
			r.code = -1
		}
	}()
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		<-r.done
	})
	return r
}

// waitLine waits up to 10 s for a line of b that is line.
func waitLine(t *testing.T, b *lineBuffer, line string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for !hasLine(b.String(), line) {
		select {
		case <-b.added:
		case <-deadline:
			t.Fatalf("no line %q after 10s; output so far:\n%s", line, b)
		}
	}
}

func hasLine(out, line string) bool {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if sc.Text() == line {
			return true
		}
	}
	return false
}
