package redistest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// StartACL starts a redis-server on a free loopback port that serves only user, with password
// pass and every command and key allowed; the default user is off, so a client without these
// credentials can do nothing, not even PING. t.Cleanup kills it. args are extra options as for
// Start. Pause, Resume and Kill work as for Start; Restart does not (it checks the new process
// without credentials).
func StartACL(t testing.TB, user, pass string, args ...string) *Server {
	t.Helper()
	Require(t)
	acl := []string{"--user", user, "on", ">" + pass, "~*", "&*", "+@all", "--user", "default", "off"}
	s := &Server{args: append(acl, args...), dir: t.TempDir()}
	var err error
	for range 5 { // a free port may be taken between finding and binding it
		var port int
		if port, err = freePort(); err != nil {
			continue
		}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err = s.startAs(user, pass); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("redistest: start redis-server with ACL: %v", err)
	}
	t.Cleanup(s.kill)
	return s
}

// ACLClient returns a go-redis client for addr logged in as user, with go-redis's defaults
// otherwise; t.Cleanup closes it.
func ACLClient(t testing.TB, addr, user, pass string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr:                     addr,
		Username:                 user,
		Password:                 pass,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// startAs is start with a readiness check that logs in as user.
func (s *Server) startAs(user, pass string) error {
	_, port, _ := net.SplitHostPort(s.Addr)
	args := append([]string{
		"--bind", "127.0.0.1", "--port", port, "--dir", s.dir,
		"--save", "", "--appendonly", "no", "--protected-mode", "no", "--daemonize", "no",
	}, s.args...)
	cmd := exec.Command("redis-server", args...)
	out := new(bytes.Buffer)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Username: user, Password: pass, MaxRetries: -1,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			s.mu.Lock()
			s.cmd, s.exited = cmd, exited
			s.mu.Unlock()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("redis-server on %s exited: %s", s.Addr, out)
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			return fmt.Errorf("redis-server on %s did not answer: %v; output: %s", s.Addr, err, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
