package redlock_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

// waits tells a test when an acquiring call of its Client waits in line: it was refused, began
// to wait (Observer.Waiting), and its next attempt, made as a waiter with a place in the key's
// line, was decided (Observer.Round). A test acts on that instead of sleeping on a guess.
type waits chan struct{}

// waitedKey marks a call's context with whether the call began to wait since its last round.
type waitedKey struct{}

// watchWaits returns a waits and the Option that makes a Client report to it. The Option sets
// the Client's Observer: it replaces one given before it.
func watchWaits() (waits, redlock.Option) {
	w := make(waits, 64)
	return w, redlock.WithObserver(locktrace.Observer{
		Begin: func(ctx context.Context, _ locktrace.Call) context.Context {
			return context.WithValue(ctx, waitedKey{}, new(atomic.Bool))
		},
		Waiting: func(ctx context.Context, _ locktrace.Call) {
			if waited, ok := ctx.Value(waitedKey{}).(*atomic.Bool); ok {
				waited.Store(true)
			}
		},
		Round: func(ctx context.Context, _ locktrace.Round) {
			if waited, ok := ctx.Value(waitedKey{}).(*atomic.Bool); ok && waited.CompareAndSwap(true, false) {
				select {
				case w <- struct{}{}:
				default: // the test waits for fewer
				}
			}
		},
	})
}

// await waits until one more call waits in line, failing t after 10 s.
func (w waits) await(t *testing.T) {
	t.Helper()
	redistest.Receive(t, "a call waits in line", w)
}

// reset forgets the waits reported so far: those of calls before the one the test awaits.
func (w waits) reset() {
	for {
		select {
		case <-w:
		default:
			return
		}
	}
}
