//go:build unix && !linux

package main

import (
	"cmp"
	"os"
	"os/exec"
	"syscall"
)

func selfExe() (string, error) { return os.Executable() }

// startChild starts cmd in process group pgid (one of its own when 0), in the foreground of
// terminal fg when not nil. There is no parent-death signal here: only the guard kills the
// command when exec dies. Stops of the command are not watched: Ctrl-Z stops it, leaving the
// terminal to it.
func startChild(cmd *exec.Cmd, fg *terminal, pgid int) (*child, error) {
	c := &child{cmd: cmd, exited: make(chan struct{}), stopped: make(chan struct{})}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
	if fg != nil {
		cmd.SysProcAttr.Foreground, cmd.SysProcAttr.Ctty = true, fg.fd()
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c.pgid = cmp.Or(pgid, cmd.Process.Pid)
	go func() { cmd.Wait(); close(c.exited) }()
	return c, nil
}

// stopSelf stops exec's process group and returns once it is continued.
func stopSelf() { syscall.Kill(0, syscall.SIGTSTP) }
