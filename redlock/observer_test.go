package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

// recorder is an Observer that writes every report down as a line, and checks that node
// replies carry the context that Begin returned.
type recorder struct {
	mu     sync.Mutex
	lines  []string
	orphan int // node replies without a call's context
}

type callKey struct{}

func (r *recorder) add(format string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprintf(format, a...))
}

func (r *recorder) Begin(ctx context.Context, c locktrace.Call) context.Context {
	r.add("begin %v %v key=%s quorum=%d", c.Op, c.Kind, c.Key, c.Quorum)
	return context.WithValue(ctx, callKey{}, c)
}

// Round writes whether the votes reached the call's quorum: how many replies came before the
// decision varies.
func (r *recorder) Round(ctx context.Context, rd locktrace.Round) {
	c, _ := ctx.Value(callKey{}).(locktrace.Call)
	r.add("round %v %v quorum=%v", c.Op, rd.Outcome, rd.Votes >= c.Quorum)
}

func (r *recorder) NodeReply(ctx context.Context, n locktrace.NodeReply) {
	if ctx.Value(callKey{}) == nil {
		r.mu.Lock()
		r.orphan++
		r.mu.Unlock()
	}
	r.add("node %d %v %v", n.Node, n.Op, n.Outcome)
}

func (r *recorder) Waiting(ctx context.Context, c locktrace.Call) { r.add("wait %v true", c.Op) }

func (r *recorder) Waited(ctx context.Context, c locktrace.Call) { r.add("wait %v false", c.Op) }

// observer returns the Observer that reports to r.
func (r *recorder) observer() locktrace.Observer {
	return locktrace.Observer{Begin: r.Begin, Round: r.Round, NodeReply: r.NodeReply, Waiting: r.Waiting,
		Waited: r.Waited, End: r.End, Ended: r.Ended}
}

func (r *recorder) End(ctx context.Context, c locktrace.Call, ret locktrace.Return) {
	r.add("end %v %v %v", c.Op, c.Kind, ret.Outcome)
}

func (r *recorder) Ended(h locktrace.Holding) { r.add("ended %v lost=%v", h.Kind, h.Lost) }

// take returns the lines so far, sorted (node replies come in any order), and forgets them.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Sorted(slices.Values(r.lines))
	r.lines = nil
	return out
}

// count returns how many lines so far begin with prefix.
func (r *recorder) count(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range r.lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// calls drops the node replies from lines: a call's last replies may come after it returned.
func calls(lines []string) []string {
	return slices.DeleteFunc(lines, func(l string) bool { return strings.HasPrefix(l, "node ") })
}

func sameLines(t *testing.T, got, want []string) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Fatalf("reports:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

func TestObserverSeesLockAndUnlock(t *testing.T) {
	rec := &recorder{}
	_, c := cluster(t, 3, redlock.WithObserver(rec.observer()))
	ctx := context.Background()
	l, err := c.Lock(ctx, "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// A reply after the decision comes in a goroutine of the Client.
	redistest.Eventually(t, "three acquire replies", func() bool { return rec.count("node") == 3 })
	sameLines(t, rec.take(), []string{
		"begin Lock mutex key=k quorum=2",
		"node 0 acquire ok", "node 1 acquire ok", "node 2 acquire ok",
		"round Lock ok quorum=true",
		"end Lock mutex ok",
	})
	if err := l.Extend(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, "three extend replies", func() bool { return rec.count("node") == 3 })
	sameLines(t, rec.take(), []string{
		"begin Extend mutex key=k quorum=2",
		"node 0 extend ok", "node 1 extend ok", "node 2 extend ok",
		"round Extend ok quorum=true",
		"end Extend mutex ok",
	})
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, "three release replies", func() bool { return rec.count("node") == 3 })
	sameLines(t, rec.take(), []string{
		"begin Unlock mutex key=k quorum=2",
		"ended mutex lost=false",
		"node 0 release ok", "node 1 release ok", "node 2 release ok",
		"round Unlock ok quorum=true",
		"end Unlock mutex ok",
	})
	if rec.orphan != 0 {
		t.Errorf("%d node replies without the call's context", rec.orphan)
	}
}

func TestObserverSeesEveryKind(t *testing.T) {
	rec := &recorder{}
	_, c := cluster(t, 3, redlock.WithObserver(rec.observer()))
	ctx := context.Background()
	sem, err := c.Semaphore("s", 2)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := c.RWMutex("rw")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		op, kind string
		lock     func() (*redlock.Lock, error)
	}{
		{"Lock", "semaphore", func() (*redlock.Lock, error) { return sem.Lock(ctx, time.Second) }},
		{"TryLock", "semaphore", func() (*redlock.Lock, error) { return sem.TryLock(ctx, time.Second) }},
		{"Lock", "rwmutex.read", func() (*redlock.Lock, error) { return rw.RLock(ctx, time.Second) }},
		{"TryLock", "rwmutex.read", func() (*redlock.Lock, error) { return rw.TryRLock(ctx, time.Second) }},
		{"Lock", "rwmutex.write", func() (*redlock.Lock, error) { return rw.Lock(ctx, time.Second) }},
		{"TryLock", "rwmutex.write", func() (*redlock.Lock, error) { return rw.TryLock(ctx, time.Second) }},
		{"Lock", "multi", func() (*redlock.Lock, error) { return c.LockAll(ctx, []string{"a", "b"}, time.Second) }},
		{"TryLock", "multi", func() (*redlock.Lock, error) { return c.TryLockAll(ctx, []string{"a", "b"}, time.Second) }},
		{"Lock", "mutex", func() (*redlock.Lock, error) { return c.Lock(ctx, "m", time.Second) }},
		{"TryLock", "mutex", func() (*redlock.Lock, error) { return c.TryLock(ctx, "m", time.Second) }},
	} {
		l, err := tc.lock()
		if err != nil {
			t.Fatalf("%s: %v", tc.kind, err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("%s: %v", tc.kind, err)
		}
		var ends []string
		for _, line := range rec.take() {
			if strings.HasPrefix(line, "end ") {
				ends = append(ends, line)
			}
		}
		sameLines(t, ends, []string{"end " + tc.op + " " + tc.kind + " ok", "end Unlock " + tc.kind + " ok"})
	}
}

// Every outcome of an acquiring call: refused, canceled, and error for bad input and for a
// closed Client; a wait is reported from the first refusal until the call returns.
func TestObserverOutcomes(t *testing.T) {
	rec := &recorder{}
	_, c := cluster(t, 3, redlock.WithObserver(rec.observer()), redlock.WithRetryDelay(time.Millisecond, 2*time.Millisecond))
	ctx := context.Background()
	held, err := c.Lock(ctx, "k", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rec.take()

	if _, err := c.TryLock(ctx, "k", time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock of a held key: %v", err)
	}
	lines := rec.take()
	if !slices.Contains(lines, "end TryLock mutex refused") || !slices.Contains(lines, "round TryLock refused quorum=false") {
		t.Fatalf("TryLock of a held key reported:\n\t%s", strings.Join(lines, "\n\t"))
	}

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := c.Lock(short, "k", time.Second); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock of a held key until ctx ends: %v", err)
	}
	lines = rec.take()
	for _, want := range []string{"end Lock mutex canceled", "wait Lock true", "wait Lock false"} {
		if !slices.Contains(lines, want) {
			t.Fatalf("Lock of a held key until ctx ends: no %q in:\n\t%s", want, strings.Join(lines, "\n\t"))
		}
	}

	for name, call := range map[string]func() error{
		"empty key":  func() error { _, err := c.TryLock(ctx, "", time.Second); return err },
		"bad ttl":    func() error { _, err := c.Lock(ctx, "x", time.Microsecond); return err },
		"Do nil fn":  func() error { return c.Do(ctx, "x", time.Second, nil) },
		"Extend ttl": func() error { return held.Extend(ctx, time.Microsecond) },
	} {
		if err := call(); err == nil {
			t.Fatalf("%s: no error", name)
		}
		lines := calls(rec.take())
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "begin") || !strings.HasSuffix(lines[1], " error") {
			t.Fatalf("%s reported:\n\t%s", name, strings.Join(lines, "\n\t"))
		}
	}

	c.Close() // releases held
	sameLines(t, calls(rec.take()), []string{"begin Unlock mutex key=k quorum=2", "round Unlock ok quorum=true",
		"end Unlock mutex ok", "ended mutex lost=false"})
	if _, err := c.Lock(ctx, "z", time.Second); !errors.Is(err, redlock.ErrClosed) {
		t.Fatalf("Lock after Close: %v", err)
	}
	sameLines(t, calls(rec.take()), []string{"begin Lock mutex key=z quorum=2", "round Lock error quorum=false", "end Lock mutex error"})
}

// A node that is down replies with an error, every call; the lock works on the others.
func TestObserverSeesNodeDown(t *testing.T) {
	rec := &recorder{}
	ms, c := cluster(t, 3, redlock.WithObserver(rec.observer()))
	ms[1].Close()
	ctx := context.Background()
	l, err := c.Lock(ctx, "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, "six node replies", func() bool { return rec.count("node") == 6 })
	lines := rec.take()
	for _, want := range []string{"node 1 acquire error", "node 1 release error", "node 0 acquire ok", "node 2 release ok"} {
		if !slices.Contains(lines, want) {
			t.Fatalf("no %q in:\n\t%s", want, strings.Join(lines, "\n\t"))
		}
	}
}

// A lock taken from a majority while Do's fn runs is reported lost, once, with Do's end.
func TestObserverSeesLoss(t *testing.T) {
	rec := &recorder{}
	ms, c := cluster(t, 3, redlock.WithObserver(rec.observer()), redlock.WithRetryDelay(time.Millisecond, 2*time.Millisecond))
	ctx := context.Background()
	err := c.Do(ctx, "k", 300*time.Millisecond, func(ctx context.Context) error {
		for _, m := range ms {
			m.Del("k")
		}
		redistest.Receive(t, "fn's context done once the next extension finds the key gone", ctx.Done())
		return nil
	})
	if !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Do = %v, want ErrNotHeld", err)
	}
	lines := rec.take()
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "ended") {
			n++
			if l != "ended mutex lost=true" {
				t.Errorf("%s, want lost", l)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d ends in:\n\t%s", n, strings.Join(lines, "\n\t"))
	}
	// Lost when an extension found the key gone, or, on a loaded machine, at the validity's end.
	for _, want := range []string{"begin Do mutex key=k quorum=2", "end Do mutex refused", "end Lock mutex ok"} {
		if !slices.Contains(lines, want) {
			t.Fatalf("no %q in:\n\t%s", want, strings.Join(lines, "\n\t"))
		}
	}
}

// An Observer needs only the hooks it wants: the others are skipped.
func TestObserverWithSomeHooks(t *testing.T) {
	var mu sync.Mutex
	var ends []string
	obs := locktrace.Observer{End: func(_ context.Context, c locktrace.Call, r locktrace.Return) {
		mu.Lock()
		defer mu.Unlock()
		ends = append(ends, fmt.Sprintf("%v %v %v", c.Op, c.Key, r.Outcome))
	}}
	_, c := cluster(t, 3, redlock.WithObserver(obs))
	ctx := context.Background()
	l, err := c.Lock(ctx, "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryLock(ctx, "k", time.Second); err == nil {
		t.Fatal("TryLock of a held key")
	}
	l.Unlock(ctx)
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"Lock k ok", "TryLock k refused", "Unlock k ok"}; !slices.Equal(ends, want) {
		t.Fatalf("ends %q, want %q", ends, want)
	}
	if _, err := redlock.New(redistest.MiniClients(t, redistest.Minis(t, 1)), redlock.WithObserver(locktrace.Observer{})); err != nil {
		t.Fatalf("an Observer without hooks: %v", err)
	}
}

func TestObserverNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{locktrace.OpTryLock.String(), "TryLock"}, {locktrace.OpDo.String(), "Do"},
		{locktrace.KindRead.String(), "rwmutex.read"}, {locktrace.KindMulti.String(), "multi"},
		{locktrace.OutcomeCanceled.String(), "canceled"}, {locktrace.NodeFence.String(), "fence"},
		{locktrace.NodeTimeout.String(), "timeout"}, {locktrace.NodeTaken.String(), "taken"},
	} {
		if tc.got != tc.want {
			t.Errorf("%q, want %q", tc.got, tc.want)
		}
	}
}
