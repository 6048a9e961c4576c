package main

import (
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// guardArg, as the only argument, makes the redlock binary the guard of a command's process
// group (see guard); it is no command for users.
const guardArg = "__exec-guard"

func init() {
	// Here and not in main: a test binary that runs exec in-process starts itself as the guard.
	if len(os.Args) == 2 && os.Args[1] == guardArg {
		os.Exit(runGuard(os.Stdin))
	}
}

// A guard is a second process that redlock exec starts before the command, to kill the
// command's process group if exec dies without ending it (SIGKILL, a crash): the parent-death
// signal kills the command's own process only, and a child it started would run on without
// the lock. The guard leads the group (the command joins it), so that it knows the group
// before the command starts: exec can die at no moment that leaves the group unguarded. It
// holds the read end of a pipe whose write end only exec holds; the kernel closes that when
// exec dies, however it dies.
type guard struct {
	cmd *exec.Cmd
	w   *os.File
}

// startGuard starts the guard in a process group of its own, for the command to join.
func startGuard() (*guard, error) {
	exe, err := selfExe()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := exec.Command(exe, guardArg)
	cmd.Args[0] = os.Args[0] // for ps: not /proc/self/exe
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, err
	}
	return &guard{cmd: cmd, w: w}, nil
}

// group returns the guard's process group for the command to join; 0, a group of the
// command's own, without a guard.
func (g *guard) group() int {
	if g == nil {
		return 0
	}
	return g.cmd.Process.Pid
}

// dismiss ends the guard without it killing anything: exec is alive and took care of the
// command.
func (g *guard) dismiss() {
	if g != nil {
		g.cmd.Process.Kill()
		g.cmd.Wait()
		g.w.Close()
	}
}

// runGuard is the guard's program: it reads in until it ends, which means that redlock exec
// died, and then kills its own process group, the command's. The signals exec passes on to
// the group are for the command, not for it. It kills nothing unless it leads its group, as
// startGuard makes it.
func runGuard(in io.Reader) int {
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGUSR1, syscall.SIGUSR2)
	if syscall.Getpgrp() != os.Getpid() {
		return 2
	}
	io.Copy(io.Discard, in)
	syscall.Kill(0, syscall.SIGKILL)
	return 0
}
