package simulate

import "time"

// A Backend runs the nodes of a run: Mini (in-memory servers, the default) or Real
// (redis-server processes). The engine, the workload and the checker are the same on both, so
// a verdict that differs between them is a finding about the model or the server.
type Backend interface {
	// String names the backend in results: "mini" or "real".
	String() string
	newNode(name string, start time.Time, sc Scenario) *node
	// tcp reports whether clients reach the nodes over TCP, through a proxy per link.
	tcp() bool
	// gap says why the backend cannot reproduce sc, "" when it can.
	gap(sc Scenario) string
}

var (
	_ Backend = Mini{}
	_ Backend = Real{}
)
