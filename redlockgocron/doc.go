// Package redlockgocron lets several gocron v2 schedulers (github.com/go-co-op/gocron/v2) share
// their jobs through a redlock.Client: NewLocker returns a gocron.Locker
// (gocron.WithDistributedLocker) under which every scheduler runs every job's timer, and each
// tick of a job runs on exactly one of them.
//
// gocron hands a Locker the job's name and nothing about the tick, so the Locker tells one tick
// from the next by time: the first scheduler to claim a job's name marks it for ttl and leaves
// the mark to expire, so that the schedulers running the same tick are refused, and the next
// tick finds the name free. That holds under assumptions on the clocks, the ttl and the
// interval, which NewLocker spells out.
package redlockgocron
