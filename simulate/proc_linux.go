package simulate

import "syscall"

// procAttr puts a server in its own process group, so that a Ctrl-C at the terminal reaches
// only the simulator, which stops its servers itself; and has the kernel kill the server if the
// simulator dies without doing so.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the server and any child it forked (an AOF rewrite).
func killGroup(pid int) { syscall.Kill(-pid, syscall.SIGKILL) }
