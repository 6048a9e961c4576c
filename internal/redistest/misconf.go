package redistest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// StartMisconf starts a redis-server like Start whose last background save failed, with
// stop-writes-on-bgsave-error yes (the default): it refuses every write, and PING, with MISCONF
// until a save succeeds. Its data directory is removed under it, so that the save cannot
// create its file, whoever runs the test (root may write anywhere that exists).
func StartMisconf(t testing.TB, args ...string) *Server {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "gone")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	s := Start(t, append([]string{"--dir", dir}, args...)...) // the last --dir counts
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	c := Client(t, s.Addr)
	ctx := context.Background()
	if err := c.ConfigSet(ctx, "save", "3600 1").Err(); err != nil { // stop-writes-on-bgsave-error counts with save points only
		t.Fatal(err)
	}
	if err := c.BgSave(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	Eventually(t, "the background save fails", func() bool {
		info, _ := c.Info(ctx, "persistence").Result()
		return strings.Contains(info, "rdb_last_bgsave_status:err")
	})
	return s
}
