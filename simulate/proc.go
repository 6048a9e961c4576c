package simulate

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/quorumlock/redlock/internal/faketime"
)

// A proc is one redis-server process.
type proc struct {
	dir       string
	addr      string
	clockFile string    // libfaketime's setting, "" without it
	began     time.Time // about when libfaketime started in the process, the base of its rate

	cmd    *exec.Cmd
	out    bytes.Buffer  // what the server printed; read once it has exited
	exited chan struct{} // closed once cmd has been waited for
}

// start runs the server and waits until it answers PING (after loading its data).
func (p *proc) start(ctx context.Context, bin string, args, env []string, clock *skew) error {
	p.out.Reset()
	p.addr = net.JoinHostPort("127.0.0.1", args[len(args)-1])
	p.began = time.Now()
	if err := p.setClock(clock); err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = &p.out, &p.out
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	p.cmd, p.exited = cmd, exited
	if p.clockFile != "" && clock.getRate() != 1 {
		p.began = time.Now()
		if err := p.setClock(clock); err != nil {
			p.kill()
			return err
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		reply, err := command(pctx, p.addr, "PING")
		cancel()
		if err == nil && reply == "PONG" {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited: %s", bin, strings.TrimSpace(p.out.String()))
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			p.kill()
			return fmt.Errorf("%s on %s did not answer: %v", bin, p.addr, err)
		}
	}
}

// setClock writes libfaketime's setting for clock. libfaketime reports
// began + rate·(t − began) + offset, and the clock reads base + rate·(t − since).
func (p *proc) setClock(clock *skew) error {
	if p.clockFile == "" {
		return nil
	}
	clock.mu.Lock()
	off := clock.base.Sub(clock.since) + time.Duration((clock.rate-1)*float64(p.began.Sub(clock.since)))
	rate := clock.rate
	clock.mu.Unlock()
	return faketime.Set(p.clockFile, off, rate)
}

// kill ends the process and any child it forked, and waits for it. A nil proc, a server's
// absent replica, has nothing to kill.
func (p *proc) kill() {
	if p == nil || p.cmd == nil {
		return
	}
	killGroup(p.cmd.Process.Pid)
	<-p.exited
	p.cmd = nil
}

// command sends one command to addr on a connection of its own and returns the reply: a simple
// or bulk string or an integer, or the error the server replied.
func command(ctx context.Context, addr string, args ...string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(5 * time.Second)
	}
	c.SetDeadline(deadline)
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write(b.Bytes()); err != nil {
		return "", err
	}
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", errors.New("simulate: empty reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", errors.New(line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("simulate: unexpected reply %q", line)
}
