package main

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
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

// runCommand runs the command, in this process's environment with vars (see childEnv), until
// it ends, and returns its exit status. When lost closes (the lock or the term is lost), it
// calls onLoss, which says so, and ends the command's process group (see supervise).
func (r *runner) runCommand(lost <-chan struct{}, onLoss func(), vars ...envVar) int {
	cmd := exec.Command(r.argv[0], r.argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, r.stdout, r.stderr
	cmd.Env = childEnv(os.Environ(), vars...)
	tty := openTerminal()
	defer tty.close()
	g, err := startGuard()
	if err != nil {
		r.errorf("no guard for the command (%v): if %s is killed, what the command started runs on", err, r.name)
	}
	defer g.dismiss()
	c, code := r.start(cmd, tty, g)
	if c == nil {
		return code
	}
	code = r.supervise(c, lost, onLoss, tty)
	if tty.foreground() == c.pgid {
		tty.takeBack(c)
	}
	return code
}

// start starts the command in the guard's process group (see startChild), in the terminal's
// foreground when exec is there, or returns nil and the exit status.
func (r *runner) start(cmd *exec.Cmd, tty *terminal, g *guard) (*child, int) {
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
	r.errorf("%v", err)
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return nil, exitNotFound
	}
	return nil, exitNoExec
}

// supervise passes signals on to the command's process group and ends the group when lost
// closes (after onLoss): SIGTERM, then SIGKILL after --grace, or as soon as the command has
// exited. When the command stops and there is a terminal, the runner stops with it
// (terminal.suspend). It returns the command's exit status.
func (r *runner) supervise(c *child, lost <-chan struct{}, onLoss func(), tty *terminal) int {
	var kill <-chan time.Time
	wasLost := false
	for {
		select {
		case <-c.exited:
			if wasLost { // what the command left in its group goes too: the lock is gone
				c.signal(syscall.SIGKILL)
			}
			return status(c.cmd.ProcessState)
		case s := <-r.sigs:
			r.logf("passing %v to the command", s)
			c.signal(s.(syscall.Signal))
		case <-c.stopped:
			if tty != nil {
				tty.suspend(c)
			}
		case <-lost:
			lost, wasLost = nil, true
			onLoss()
			c.signal(syscall.SIGTERM)
			t := time.NewTimer(r.grace)
			defer t.Stop()
			kill = t.C
		case <-kill:
			kill = nil
			r.errorf("command still running %v after SIGTERM; sending SIGKILL", r.grace)
			c.signal(syscall.SIGKILL)
		}
	}
}

// An envVar is a variable of the command's environment; an empty value removes it.
type envVar struct{ name, value string }

// childEnv is the command's environment: env with vars set, or removed when empty, so that a
// command never sees an outer lock's variable for its own. exec sets REDLOCK_TOKEN to the
// lock's token, so that the command can hand the lock on (Client.Resume takes it over), and
// REDLOCK_FENCE to its fencing token when it has one; elect sets REDLOCK_TERM.
func childEnv(env []string, vars ...envVar) []string {
	env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return slices.ContainsFunc(vars, func(v envVar) bool { return strings.HasPrefix(kv, v.name+"=") })
	})
	for _, v := range vars {
		if v.value != "" {
			env = append(env, v.name+"="+v.value)
		}
	}
	return env
}

// fenceVar is a fencing token or term as the command's environment gives it, "" for none.
func fenceVar(fence uint64) string {
	if fence == 0 {
		return ""
	}
	return strconv.FormatUint(fence, 10)
}

// status is the exit status a shell would give for the command's end.
func status(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
