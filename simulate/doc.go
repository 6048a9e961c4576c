// Package simulate runs locks against Redis nodes that fail on purpose and checks, in true time,
// whether two holders ever acted at once.
//
// A run builds a cluster of in-memory Redis nodes (miniredis), each with its own clock driving
// its key expiry, and a few clients that reach the nodes through links the simulator controls.
// The clients run a flash sale (lock, read the stock, work, write stock-1, unlock) with one
// locking strategy: this module's redlock (a mutex, a semaphore or an RWMutex), the majority
// semaphore of npm's redis-semaphore, or one of the simpler single-node locks that blog posts
// show (a timestamp lock taken over with GETSET, a release in two commands). The order form's
// rows send forms instead, each with a one-time token that must be accepted at most once:
// this module's mark on the quorum, or the single-node token checked and deleted by a script.
// A scenario schedules faults (crashes, restarts with or without data, partitions, latency, lost
// replies, clock jumps and rate skew, pauses of a client) from one seeded random source, so the
// same seed gives the same schedule. The checker then compares critical sections in true time:
// two open at once are a violation, but two readers', and for a semaphore of P permits, P+1.
//
// A Backend runs the nodes: Mini, the in-memory servers above, or Real, redis-server processes
// on free loopback ports with real faults (signals, persistence settings, a TCP proxy per client
// and node, libfaketime for the servers' clocks). The engine, the workload and the checker are
// the same on both.
//
// The engine reads time only through the time package: inside a testing/synctest bubble a run
// with a 10 s TTL takes no real time; outside one, Options.Scale shrinks every duration so a run
// takes a second or two.
package simulate
