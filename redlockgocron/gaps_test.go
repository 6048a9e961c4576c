package redlockgocron_test

import (
	"context"
	"os"
	"testing"
	"time"
)

// The tests here fail on purpose: each shows a missing piece of the redlock library that this
// module needs and does not work around. They run with REDLOCK_KNOWN_GAPS=1.
func knownGap(t *testing.T) {
	t.Helper()
	if os.Getenv("REDLOCK_KNOWN_GAPS") == "" {
		t.Skip("a known gap of the redlock library; run with REDLOCK_KNOWN_GAPS=1 to see it fail")
	}
}

// A Locker leaves each tick's mark to expire, but a redlock.Lock cannot be left: Client.Close
// releases every Lock the Client still tracks, the marks too, so a scheduler that starts the same
// tick after another scheduler's Client closed runs it a second time. Missing: a way to end a
// Lock without releasing it (its key then expires with its ttl, Close leaves it, and an Observer
// hears of an end, not of a lost lock).
func TestGapCloseReleasesTheMarks(t *testing.T) {
	knownGap(t)
	const ttl = 10 * time.Second
	ms := members(t, 2, servers(t, 3), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lock, err := locker(t, ms[0].c, ttl).Lock(ctx, "report")
	if err != nil {
		t.Fatal(err)
	}
	lock.Unlock(ctx) // the run ended; the mark stays for the ttl
	ms[0].c.Close()  // the first scheduler shuts down
	if _, err := locker(t, ms[1].c, ttl).Lock(ctx, "report"); err == nil {
		t.Fatal("the same tick ran again on another scheduler: the first one's Client released its mark on Close")
	}
}
