package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startWith is start with setup applied to the command before it starts. Its Wait gives up on
// the output a few seconds after redlock exec ended: a process that outlives it (what these
// tests look for) may hold the output open.
func startWith(t *testing.T, setup func(*exec.Cmd), env []string, args ...string) *proc {
	t.Helper()
	r := &proc{cmd: exec.Command(redlockBinary(t), args...), stdout: newLineBuffer(), stderr: newLineBuffer(), done: make(chan struct{})}
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

// pidOf returns the number on the output's line "name N", and makes sure that process is
// gone when the test ends, whatever the test found.
func pidOf(t *testing.T, out, name string) int {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			pid, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
			t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
			return pid
		}
	}
	t.Fatalf("no line %q in the output:\n%s", name+" N", out)
	return 0
}

// running reports whether pid is a process that runs: it exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // comm may hold spaces and parentheses
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] != 'Z' && s[i+2] != 'X'
}

// waitGone fails t unless none of pids runs within 5 s.
func waitGone(t *testing.T, what string, pids ...int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var left []int
		for _, p := range pids {
			if running(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var desc []string
			for _, p := range left {
				stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
				if err != nil { // it ended since
					desc = append(desc, fmt.Sprintf("%d: %v", p, err))
					continue
				}
				desc = append(desc, strings.Join(strings.Fields(string(stat))[:8], " "))
			}
			t.Fatalf("%s: processes still run 5s later:\n%s", what, strings.Join(desc, "\n"))
		}
	}
}

// children lists the processes whose parent is pid.
func children(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		fields := strings.Fields(s[i+1:])
		if len(fields) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(fields[1]); err != nil || ppid != pid {
			continue
		}
		// Never a 0 from a line it could not read: the callers kill what it returns, and
		// kill(0) is the test's own process group.
		if p, err := strconv.Atoi(strings.Fields(s)[0]); err == nil {
			out = append(out, p)
		}
	}
	return out
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
