package redistest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ServerChildren lists the redis-server processes this process started that are still there,
// zombies included (read from /proc; none where there is no /proc): a test checks with it that
// a run left nothing running.
func ServerChildren() []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after its ')'.
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(s[end+1:])
		if s[open+1:end] != "redis-server" || len(fields) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid == os.Getpid() {
			pid, _ := strconv.Atoi(strings.TrimSpace(s[:open]))
			out = append(out, pid)
		}
	}
	return out
}
