package redistest

import (
	"fmt"
	"os/exec"
)

// Launch starts a redis-server on a free loopback port like Start, for callers without a
// testing.TB (a TestMain, a benchmark's set-up): files go under dir, and the caller stops the
// process with Kill. It fails when redis-server is not installed.
func Launch(dir string, args ...string) (*Server, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, fmt.Errorf("redistest: redis-server not installed (apt-get install -y redis-server): %w", err)
	}
	s := &Server{args: args, dir: dir}
	if err := s.listen(); err != nil {
		return nil, fmt.Errorf("redistest: start redis-server: %w", err)
	}
	return s, nil
}
