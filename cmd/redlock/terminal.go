package main

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// A terminal is redlock exec's controlling terminal. When exec runs in its foreground, the
// command is given the foreground, so that it reads the terminal and gets Ctrl-C and Ctrl-Z
// as it would without exec; exec takes the foreground back when the command stops or ends.
// A nil *terminal is no terminal: its methods do nothing.
type terminal struct{ f *os.File }

// openTerminal returns exec's controlling terminal, nil when it has none (a service, cron).
func openTerminal() *terminal {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	return &terminal{f}
}

func (t *terminal) close() {
	if t != nil {
		t.f.Close()
	}
}

func (t *terminal) fd() int { return int(t.f.Fd()) }

// foreground returns the process group in the terminal's foreground, -1 when unknown.
func (t *terminal) foreground() int {
	if t == nil {
		return -1
	}
	pgid, err := unix.IoctlGetInt(t.fd(), unix.TIOCGPGRP)
	if err != nil {
		return -1
	}
	return pgid
}

// give puts process group pgid in the terminal's foreground. Exec, out of the foreground once
// the command has it, ignores SIGTTOU from then on (see ignoreTTOU): the kernel would stop it
// for taking the foreground back, and for writing to the terminal under stty tostop.
func (t *terminal) give(pgid int) {
	if t != nil {
		ignoreTTOU()
		unix.IoctlSetPointerInt(t.fd(), unix.TIOCSPGRP, pgid)
	}
}

// takeBack puts exec's process group back in the foreground, the command c having ended
// there. When Ctrl-C or Ctrl-\ ended it, the rest of exec's group (a script that runs exec) gets
// the signal too, as it would have from the terminal without exec.
func (t *terminal) takeBack(c *child) {
	t.give(syscall.Getpgrp())
	ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() && (ws.Signal() == syscall.SIGINT || ws.Signal() == syscall.SIGQUIT) {
		syscall.Kill(0, ws.Signal()) // exec itself catches it (signal.Notify) and exits as the command did
	}
}

// ignoreTTOU ignores SIGTTOU for the rest of exec's run. Only once the command has started: an
// ignored signal stays ignored in the programs a process starts.
func ignoreTTOU() { signal.Ignore(syscall.SIGTTOU) }

// suspend follows the command c into a stop (Ctrl-Z, or a read of the terminal from the
// background): exec takes the foreground back and stops its own process group, as the shell's
// job; once continued it gives the foreground back to c when the job is in the foreground, and
// continues c.
func (t *terminal) suspend(c *child) {
	own := syscall.Getpgrp()
	if t.foreground() == c.pgid {
		t.give(own)
	}
	stopSelf()
	if t.foreground() == own {
		t.give(c.pgid)
	}
	c.signal(syscall.SIGCONT)
}
