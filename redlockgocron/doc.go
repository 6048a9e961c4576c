// Package redlockgocron lets several gocron v2 schedulers (github.com/go-co-op/gocron/v2) share
// their jobs through a redlock.Client, in one of two ways:
//
//   - NewLocker returns a gocron.Locker (gocron.WithDistributedLocker): every scheduler runs
//     every job's timer, and each tick of a job runs on exactly one of them.
//   - NewElector returns a gocron.Elector (gocron.WithDistributedElector): the schedulers elect
//     a leader on the Client's quorum (redlock.Election), and only the leader runs jobs; when it
//     resigns, closes its Client or crashes, another takes over.
//
// gocron hands a Locker the job's name and nothing about the tick, so the Locker tells one tick
// from the next by time: the first scheduler to claim a job's name marks it for ttl and leaves
// the mark to expire, so that the schedulers running the same tick are refused, and the next
// tick finds the name free. That holds under assumptions on the clocks, the ttl and the
// interval, which NewLocker spells out. The Elector needs none of them.
package redlockgocron
