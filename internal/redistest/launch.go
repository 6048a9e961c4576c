package redistest

import (
	"fmt"
	"net"
	"os/exec"
	"strconv"
)

// Launch starts a redis-server on a free loopback port like Start, for callers without a
// testing.TB (a TestMain, a benchmark's set-up): files go under dir, and the caller stops the
// process with Kill. It fails when redis-server is not installed.
func Launch(dir string, args ...string) (*Server, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, fmt.Errorf("redistest: redis-server not installed (apt-get install -y redis-server): %w", err)
	}
	s := &Server{args: args, dir: dir}
	var err error
	for range 5 { // a free port may be taken between finding and binding it
		var port int
		if port, err = freePort(); err != nil {
			continue
		}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err = s.start(); err == nil {
			return s, nil
		}
	}
	return nil, fmt.Errorf("redistest: start redis-server: %w", err)
}
