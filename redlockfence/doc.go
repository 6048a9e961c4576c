// Package redlockfence makes a resource refuse a stale lock holder: the check of a fencing
// token, done where the write happens, for SQL databases (PostgreSQL, SQLite) and for Redis.
//
// A lock made with redlock.WithFencing hands every holder a token (Lock.Fence) larger than any
// earlier holder's. A holder that was paused past its lock's validity (a stop-the-world pause, a
// suspended machine, a slow network) does not know it lost the lock, and no lock service can
// stop it: its late write has to be refused by the resource. The guards here keep, per
// resource, the highest token accepted so far, and in the same transaction or script as the
// write, accept a token not lower than it (recording it) and refuse a lower one with ErrStale.
//
// SQL's Check joins the caller's transaction and Do runs a whole one; Redis's Set and Eval run
// the check and the write in one script. A Redis guard that finds a resource's data without
// its record refuses with ErrFenceLost, and the server it writes to must not evict records
// (CheckServer says whether it may). See docs/fencing.md for the isolation each needs, what the
// guarded Redis must be, and what the check costs.
package redlockfence
