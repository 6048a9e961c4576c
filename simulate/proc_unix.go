//go:build unix && !linux

package simulate

import "syscall"

// procAttr puts a server in its own process group, so that a Ctrl-C at the terminal reaches
// only the simulator, which stops its servers itself.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills the server and any child it forked (an AOF rewrite).
func killGroup(pid int) { syscall.Kill(-pid, syscall.SIGKILL) }
