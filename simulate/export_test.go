package simulate

import (
	"os"
	"testing"
)

// RequireReal returns the real backend with redis-server and libfaketime found. When one is
// missing it fails t under make test (REDLOCK_REQUIRE_REDIS=1) or in CI (CI=true), and skips
// it elsewhere.
func RequireReal(t testing.TB) Real {
	t.Helper()
	b, err := Real{}.Check(Scenario{Name: "test", NodeClocks: true})
	if err != nil {
		if os.Getenv("CI") == "true" || os.Getenv("REDLOCK_REQUIRE_REDIS") != "" {
			t.Fatalf("required here: %v", err)
		}
		t.Skip(err)
	}
	return b
}
