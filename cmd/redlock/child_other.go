//go:build unix && !linux

package main

import (
	"os/exec"
	"syscall"
)

// startChild starts cmd in a process group of its own, in the foreground of terminal fg when
// not nil. Stops of the command are not watched: Ctrl-Z stops it, leaving the terminal to it.
func startChild(cmd *exec.Cmd, fg *terminal) (*child, error) {
	c := &child{cmd: cmd, exited: make(chan struct{}), stopped: make(chan struct{})}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if fg != nil {
		cmd.SysProcAttr.Foreground, cmd.SysProcAttr.Ctty = true, fg.fd()
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c.pgid = cmd.Process.Pid
	go func() { cmd.Wait(); close(c.exited) }()
	return c, nil
}

// stopSelf stops exec's process group and returns once it is continued.
func stopSelf() { syscall.Kill(0, syscall.SIGTSTP) }
