package redlockrueidis_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/quorumlock/redlock/internal/redistest"
)

func TestMain(m *testing.M) {
	redistest.Quiet()
	// A rueidis cluster client that lost a master refreshes its view of the cluster after a
	// sleep of 5 s, on a goroutine of its own that its Close does not end
	// (TestClusterNodeCallsToLiveMastersGoOnWhileOneIsStopped); not one of ours.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"))
}
