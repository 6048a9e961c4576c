//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY returns a pseudo-terminal's master and its terminal; t.Cleanup closes both.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	go func() { // drain the echo, so that the terminal never blocks on it
		buf := make([]byte, 1024)
		for {
			if _, err := master.Read(buf); err != nil {
				return
			}
		}
	}()
	return master, tty
}

// A command run from a terminal is in the foreground: it reads the terminal (in a background
// group it would be stopped by SIGTTIN), Ctrl-C reaches it once (from the terminal; redlock
// exec, no longer in the foreground, does not pass it on again), and after Ctrl-Z it goes on
// (redlock exec here is a session leader, whose process group job control cannot stop: it
// continues the command rather than leave the terminal to a stopped group).
func TestExecInteractive(t *testing.T) {
	c := startCluster(t)
	master, tty := openPTY(t)
	script := `trap 'n=$((n+1)); echo "INT $n"' INT
echo ready
while :; do
	read line
	case "$line" in quit) exit 0;; "") ;; *) echo "read $line";; esac
done`
	r := startWith(t, func(cmd *exec.Cmd) {
		cmd.Stdin = tty
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	}, nil, "exec", "--nodes", c.nodes, "--key", "k", "--", "sh", "-c", script)
	waitLine(t, r.stdout, "ready")
	say := func(s string) {
		t.Helper()
		if _, err := master.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	say("one\n")
	waitLine(t, r.stdout, "read one")

	say("\x03") // Ctrl-C
	waitLine(t, r.stdout, "INT 1")
	say("two\n")
	waitLine(t, r.stdout, "read two")
	time.Sleep(100 * time.Millisecond) // a second SIGINT, passed on by redlock exec, would be here by now
	if strings.Contains(r.stdout.String(), "INT 2") {
		t.Fatalf("Ctrl-C reached the command twice:\n%s", r.stdout)
	}

	say("\x1a") // Ctrl-Z
	say("three\n")
	waitLine(t, r.stdout, "read three")

	say("quit\n")
	if code := r.wait(t); code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, r.stdout, r.stderr)
	}
}

// Under a shell with job control, as in a terminal: the command reads the terminal at once (it
// is in the foreground), Ctrl-C reaches it once, and Ctrl-Z stops the whole job (the shell
// sees redlock exec stopped, status 148) until fg continues it, the command with it.
func TestExecInteractiveUnderAShell(t *testing.T) {
	c := startCluster(t)
	master, tty := openPTY(t)
	shell := `set -m
"$REDLOCK" exec --key k -- sh -c "$SCRIPT"
echo "shell: exec status $?"
fg >/dev/null
echo "shell: fg status $?"`
	script := `trap 'n=$((n+1)); echo "INT $n"' INT
echo ready
while :; do
	read line
	case "$line" in quit) exit 0;; "") ;; *) echo "read $line";; esac
done`
	r := startShell(t, tty, shell, "REDLOCK_NODES="+c.nodes, "SCRIPT="+script)
	say := func(s string) {
		t.Helper()
		if _, err := master.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	waitLine(t, r.stdout, "ready")
	say("one\n")
	waitLine(t, r.stdout, "read one")
	if strings.Contains(r.stdout.String(), "shell:") {
		t.Fatalf("the job stopped on the command's first read (SIGTTIN: not in the foreground):\n%s", r.stdout)
	}
	say("\x03")
	waitLine(t, r.stdout, "INT 1")
	say("two\n")
	waitLine(t, r.stdout, "read two")
	time.Sleep(100 * time.Millisecond)
	if strings.Contains(r.stdout.String(), "INT 2") {
		t.Fatalf("Ctrl-C reached the command twice:\n%s", r.stdout)
	}
	say("\x1a")
	waitLine(t, r.stdout, "shell: exec status 148")
	say("three\n")
	waitLine(t, r.stdout, "read three")
	say("quit\n")
	waitLine(t, r.stdout, "shell: fg status 0")
}

// startShell runs shell with sh as the session leader of terminal tty, $REDLOCK naming the
// redlock binary.
func startShell(t *testing.T, tty *os.File, shell string, env ...string) *proc {
	t.Helper()
	r := &proc{cmd: exec.Command("sh", "-c", shell), stdout: newLineBuffer(), stderr: newLineBuffer(), done: make(chan struct{})}
	r.cmd.Env = append(append(os.Environ(), "REDLOCK="+redlockBinary(t)), env...)
	r.cmd.Stdin, r.cmd.Stdout, r.cmd.Stderr = tty, r.stdout, r.stderr
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	r.cmd.WaitDelay = 5 * time.Second
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		for _, p := range children(r.cmd.Process.Pid) { // the shell's jobs, each a group of the session
			syscall.Kill(-p, syscall.SIGKILL)
		}
		r.cmd.Process.Kill()
		<-r.done
	})
	return r
}

// A script that runs redlock exec, run from a terminal: Ctrl-C, which reaches only the command
// (in the foreground), ends the script too, as it would without exec.
func TestExecCtrlCEndsTheScriptAroundIt(t *testing.T) {
	c := startCluster(t)
	master, tty := openPTY(t)
	shell := `set -m
sh -c '"$REDLOCK" exec --key k -- sh -c "echo ready; while :; do sleep 0.05; done"; echo "script: went on after exec, status $?"'
echo "shell: went on, job status $?"`
	r := startShell(t, tty, shell, "REDLOCK_NODES="+c.nodes)
	waitLine(t, r.stdout, "ready")
	if _, err := master.Write([]byte("\x03")); err != nil {
		t.Fatal(err)
	}
	select { // dash, as the job died of SIGINT, raises it on itself and ends here too
	case <-r.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the shell still runs 10s after Ctrl-C:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout.String(), "script: went on") {
		t.Fatalf("the script went on after Ctrl-C:\n%s", r.stdout)
	}
}
