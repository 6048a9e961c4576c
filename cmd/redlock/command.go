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

// A child is the command redlock exec runs, in a process group of its own (the guard's), so
// that the signals exec sends reach the processes the command started too.
type child struct {
	cmd     *exec.Cmd
	pgid    int
	exited  chan struct{} // closed once the command has been waited for
	stopped chan struct{} // receives when the command stops (Linux only, see watchStops)
}

// signal sends sig to the command's process group.
func (c *child) signal(sig syscall.Signal) {
	syscall.Kill(-c.pgid, sig)
}

// runCommand runs the command while it keeps the lock, and returns its exit status.
func (e *execution) runCommand(lock *redlock.Lock) int {
	cmd := exec.Command(e.argv[0], e.argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, e.stdout, e.stderr
	cmd.Env = childEnv(os.Environ(), lock.Fence(), lock.Token())
	tty := openTerminal()
	defer tty.close()
	g, err := startGuard()
	if err != nil {
		e.errorf("no guard for the command (%v): if redlock exec is killed, what the command started runs on", err)
	}
	defer g.dismiss()
	c, code := e.start(cmd, tty, g)
	if c == nil {
		return code
	}
	code = e.supervise(c, lock, tty)
	if tty.foreground() == c.pgid {
		tty.takeBack(c)
	}
	return code
}

// start starts the command in the guard's process group (see startChild), in the terminal's
// foreground when exec is there, or returns nil and the exit status.
func (e *execution) start(cmd *exec.Cmd, tty *terminal, g *guard) (*child, int) {
	own := syscall.Getpgrp()
	fg := tty
	if tty.foreground() != own { // no terminal, or exec runs in the background: leave it be
		fg = nil
	}
	c, err := startChild(cmd, fg, g.group())
	if err == nil {
		if fg != nil {
			ignoreTTOU() // see terminal.give
		}
		return c, 0
	}
	if fg != nil && tty.foreground() != own { // the child took the foreground, then failed
		tty.give(own)
	}
	e.errorf("%v", err)
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return nil, exitNotFound
	}
	return nil, exitNoExec
}

// supervise passes signals on to the command's process group and ends the group when the
// lock is lost: SIGTERM, then SIGKILL after --grace, or as soon as the command has exited.
// When the command stops and exec has a terminal, exec stops with it (terminal.suspend). It
// returns the command's exit status.
func (e *execution) supervise(c *child, lock *redlock.Lock, tty *terminal) int {
	var kill <-chan time.Time
	lost, wasLost := lock.Lost(), false
	for {
		select {
		case <-c.exited:
			if wasLost { // what the command left in its group goes too: the lock is gone
				c.signal(syscall.SIGKILL)
			}
			return status(c.cmd.ProcessState)
		case s := <-e.sigs:
			e.logf("passing %v to the command", s)
			c.signal(s.(syscall.Signal))
		case <-c.stopped:
			if tty != nil {
				tty.suspend(c)
			}
		case <-lost:
			lost, wasLost = nil, true
			e.reportLoss(lock.Err())
			c.signal(syscall.SIGTERM)
			t := time.NewTimer(e.grace)
			defer t.Stop()
			kill = t.C
		case <-kill:
			kill = nil
			e.errorf("command still running %v after SIGTERM; sending SIGKILL", e.grace)
			c.signal(syscall.SIGKILL)
		}
	}
}

// reportLoss says that the lock was lost, and why (Lock.Err).
func (e *execution) reportLoss(why error) {
	e.errorf("lock %q lost; sending SIGTERM, SIGKILL in %v", e.key, e.grace)
	for _, line := range describe(why, e.nodes) {
		if line != redlock.ErrNotHeld.Error() {
			fmt.Fprintf(e.stderr, "  %s\n", line)
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
