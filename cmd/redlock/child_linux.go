package main

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// selfExe names this program's binary for the guard: the running one, even if it was
// replaced or removed since.
func selfExe() (string, error) { return "/proc/self/exe", nil }

// startChild starts cmd in process group pgid (one of its own when 0), in the foreground of
// terminal fg when not nil, with SIGKILL as its parent-death signal: the kernel kills the
// command when exec dies, SIGKILL included. That signal comes when the thread that started
// the child ends, not the process (go.dev/issue/27505), so a goroutine locked to its thread
// starts the child and keeps the thread until it has waited for it.
func startChild(cmd *exec.Cmd, fg *terminal, pgid int) (*child, error) {
	c := &child{cmd: cmd, exited: make(chan struct{}), stopped: make(chan struct{}, 1)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid, Pdeathsig: syscall.SIGKILL}
	if fg != nil {
		cmd.SysProcAttr.Foreground, cmd.SysProcAttr.Ctty = true, fg.fd()
	}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		c.watchStops()
		cmd.Wait()
		close(c.exited)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	c.pgid = cmp.Or(pgid, cmd.Process.Pid)
	return c, nil
}

// cldStopped is CLD_STOPPED, the code of a child's stop in its waitid report.
const cldStopped = 5

// watchStops sends on c.stopped whenever the command stops, until it exits. It reads the
// command's state changes without reaping it (WNOWAIT), and consumes only the stops: cmd.Wait
// reaps it.
func (c *child) watchStops() {
	pid := c.cmd.Process.Pid
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WSTOPPED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || info.Code != cldStopped {
			return
		}
		unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WNOHANG, nil) // or it is found again
		select {
		case c.stopped <- struct{}{}:
		default: // one is pending already
		}
	}
}

// stopSelf stops exec's process group, as Ctrl-Z would have had the command been in it, and
// returns once the group is continued; at once when job control cannot stop the group (it is
// orphaned: no shell waits for it), for the kernel would discard the stop. It waits for
// SIGCONT rather than signal itself twice: a second stop signal could come after the
// continue. The timer covers a stop discarded after all.
func stopSelf() {
	if orphaned() {
		return
	}
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	defer signal.Stop(cont)
	syscall.Kill(0, syscall.SIGTSTP)
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-cont:
	case <-t.C:
	}
}

// orphaned reports whether exec's process group is orphaned as the kernel judges it, read from
// /proc: no member has a parent in another group of the same session, leaving out zombies and
// children of init. When in doubt it says yes, and exec does not stop.
func orphaned() bool {
	own := syscall.Getpgrp()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		p, ok := readStat(f)
		if !ok || p.pgrp != own || p.state == 'Z' || p.ppid <= 1 {
			continue
		}
		if parent, ok := readStat(fmt.Sprintf("/proc/%d/stat", p.ppid)); ok && parent.pgrp != own && parent.session == p.session {
			return false
		}
	}
	return true
}

// A procStat is what orphaned reads of a process in /proc/PID/stat.
type procStat struct {
	state               byte
	ppid, pgrp, session int
}

func readStat(path string) (procStat, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return procStat{}, false
	}
	// pid (comm) state ppid pgrp session ...: comm may hold spaces and parentheses.
	rest := string(b[bytes.LastIndexByte(b, ')')+1:])
	var p procStat
	_, err = fmt.Sscanf(rest, " %c %d %d %d", &p.state, &p.ppid, &p.pgrp, &p.session)
	return p, err == nil
}
