//go:build !unix

package simulate

import (
	"os"
	"syscall"
)

// procAttr has nothing to add where there are no process groups.
func procAttr() *syscall.SysProcAttr { return nil }

// killGroup kills the server.
func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}
