package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/quorumlock/redlock/redlock"
)

// runCommand runs the command while it keeps the lock, and returns its exit status.
func (e *execution) runCommand(lock *redlock.Lock) int {
	cmd := exec.Command(e.argv[0], e.argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, e.stdout, e.stderr
	cmd.Env = childEnv(os.Environ(), lock.Fence(), lock.Token())
	if err := cmd.Start(); err != nil {
		e.errorf("%v", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return exitNotFound
		}
		return exitNoExec
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()

	h := hold(lock, e.ttl)
	defer h.end()
	return e.supervise(cmd, exited, lock, h)
}

// supervise passes signals on to the running command and ends it when the lock is lost:
// SIGTERM, then SIGKILL after --grace. It returns the command's exit status.
func (e *execution) supervise(cmd *exec.Cmd, exited <-chan struct{}, lock *redlock.Lock, h *holder) int {
	var kill <-chan time.Time
	lost := lock.Lost()
	for {
		select {
		case <-exited:
			h.end()
			return status(cmd.ProcessState)
		case s := <-e.sigs:
			e.logf("passing %v to the command", s)
			cmd.Process.Signal(s)
		case <-lost:
			lost = nil
			e.errorf("lock %q lost; sending SIGTERM, SIGKILL in %v", e.key, e.grace)
			for _, line := range describe(h.err(), e.nodes) {
				if line != redlock.ErrNotHeld.Error() {
					fmt.Fprintf(e.stderr, "  %s\n", line)
				}
			}
			cmd.Process.Signal(syscall.SIGTERM)
			t := time.NewTimer(e.grace)
			defer t.Stop()
			kill = t.C
		case <-kill:
			kill = nil
			e.errorf("command still running %v after SIGTERM; sending SIGKILL", e.grace)
			cmd.Process.Kill()
		}
	}
}

// childEnv is the command's environment: env with REDLOCK_TOKEN set to the lock's token, so
// that the command can hand the lock on (Client.Resume takes it over), and REDLOCK_FENCE to its
// fencing token when it has one, removed otherwise, so that a command never sees an outer
// lock's fencing token.
func childEnv(env []string, fence uint64, token string) []string {
	env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, "REDLOCK_FENCE=") || strings.HasPrefix(kv, "REDLOCK_TOKEN=")
	})
	env = append(env, "REDLOCK_TOKEN="+token)
	if fence != 0 {
		env = append(env, "REDLOCK_FENCE="+strconv.FormatUint(fence, 10))
	}
	return env
}

// status is the exit status a shell would give for the command's end.
func status(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
