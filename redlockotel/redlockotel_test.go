package redlockotel_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlockotel"
)

// want fails t unless every key of want is in got with that value.
func want(t *testing.T, got map[string]float64, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if t.Failed() {
		t.Fatalf("points:\n\t%s", strings.Join(lines(got), "\n\t"))
	}
}

// Every metric appears with its attributes after a Lock, a refused TryLock and an Unlock.
func TestMetricsAfterLockAndUnlock(t *testing.T) {
	w := newWorld(t, 3, nil)
	ctx := context.Background()
	l, err := w.client.Lock(ctx, "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.client.TryLock(ctx, "k", time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock of a held key: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	w.client.Close() // waits for the replies still in flight
	ps := w.points(t)
	want(t, ps, map[string]float64{
		"redlock.acquire.duration{redlock.kind=mutex,redlock.outcome=acquired}":     1,
		"redlock.acquire.duration{redlock.kind=mutex,redlock.outcome=not_acquired}": 1,
		"redlock.acquire.attempts{redlock.outcome=acquired}":                        1,
		"redlock.acquire.attempts{redlock.outcome=not_acquired}":                    1,
		"redlock.held.duration{redlock.kind=mutex}":                                 1,
		"redlock.lost{redlock.kind=mutex}":                                          0,
		"redlock.lost{redlock.kind=semaphore}":                                      0,
		"redlock.waiting":                                                           0,
	})
	// The TryLock's reply from a node may come after the Unlock: then that node said yes,
	// and its roll-back released it. Either way every node said something to each op.
	taken := 0.0
	for node := range 3 {
		n := strconv.Itoa(node)
		taken += ps["redlock.node.duration{redlock.node="+n+",redlock.op=acquire,redlock.outcome=taken}"]
		if ps["redlock.node.duration{redlock.node="+n+",redlock.op=acquire,redlock.outcome=ok}"] < 1 ||
			ps["redlock.node.duration{redlock.node="+n+",redlock.op=release,redlock.outcome=ok}"] < 1 {
			t.Fatalf("node %d: no acquire or release:\n\t%s", node, strings.Join(lines(ps), "\n\t"))
		}
	}
	if taken < 2 {
		t.Fatalf("the refused TryLock had %v nodes say taken:\n\t%s", taken, strings.Join(lines(ps), "\n\t"))
	}
}

// Each kind's acquisitions are told apart, and the other outcomes of an acquiring call are
// counted: canceled when ctx ended, error for bad input and a closed Client.
func TestMetricsKindsAndOutcomes(t *testing.T) {
	w := newWorld(t, 3, nil)
	ctx := context.Background()
	sem, err := w.client.Semaphore("s", 2)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := w.client.RWMutex("rw")
	if err != nil {
		t.Fatal(err)
	}
	for _, lock := range []func() (*redlock.Lock, error){
		func() (*redlock.Lock, error) { return sem.Lock(ctx, time.Second) },
		func() (*redlock.Lock, error) { return rw.RLock(ctx, time.Second) },
		func() (*redlock.Lock, error) { return rw.TryLock(ctx, time.Second) },
		func() (*redlock.Lock, error) { return w.client.LockAll(ctx, []string{"a", "b"}, time.Second) },
	} {
		l, err := lock()
		if err == nil {
			err = l.Unlock(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := w.client.Lock(done, "c", time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock with a cancelled ctx: %v", err)
	}
	if _, err := w.client.Lock(ctx, "", time.Second); err == nil {
		t.Fatal("Lock of an empty key")
	}
	w.client.Close()
	if _, err := w.client.TryLock(ctx, "z", time.Second); !errors.Is(err, redlock.ErrClosed) {
		t.Fatalf("TryLock after Close: %v", err)
	}
	want(t, w.points(t), map[string]float64{
		"redlock.acquire.duration{redlock.kind=semaphore,redlock.outcome=acquired}":     1,
		"redlock.acquire.duration{redlock.kind=rwmutex.read,redlock.outcome=acquired}":  1,
		"redlock.acquire.duration{redlock.kind=rwmutex.write,redlock.outcome=acquired}": 1,
		"redlock.acquire.duration{redlock.kind=multi,redlock.outcome=acquired}":         1,
		"redlock.acquire.duration{redlock.kind=mutex,redlock.outcome=canceled}":         1,
		"redlock.acquire.duration{redlock.kind=mutex,redlock.outcome=error}":            2,
		"redlock.held.duration{redlock.kind=semaphore}":                                 1,
		"redlock.held.duration{redlock.kind=multi}":                                     1,
		"redlock.acquire.attempts{redlock.outcome=error}":                               1, // the closed Client's
	})
}

// A contended Lock waits: redlock.waiting is 1 while it does, 0 once it has the lock.
func TestContendedLockRecordsWait(t *testing.T) {
	w := newWorld(t, 3, nil, redlock.WithRetryDelay(time.Millisecond, 5*time.Millisecond))
	ctx := context.Background()
	held, err := w.client.Lock(ctx, "k", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := w.client.Lock(ctx, "k", time.Second)
		if err == nil {
			err = l.Unlock(ctx)
		}
		got <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); w.points(t)["redlock.waiting"] != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no waiting call after 10s:\n\t%s", strings.Join(lines(w.points(t)), "\n\t"))
		}
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	ps := w.points(t)
	want(t, ps, map[string]float64{
		"redlock.waiting": 0,
		"redlock.acquire.duration{redlock.kind=mutex,redlock.outcome=acquired}": 2,
		"redlock.acquire.attempts{redlock.outcome=acquired}":                    2,
	})
	if ps["redlock.acquire.attempts{redlock.outcome=not_acquired}"] < 1 {
		t.Fatalf("no refused attempt:\n\t%s", strings.Join(lines(ps), "\n\t"))
	}
}

// A node that is down shows in its own series, with outcome error; the lock still works.
func TestNodeDownRecordsError(t *testing.T) {
	w := newWorld(t, 3, nil)
	w.nodes[1].Close()
	ctx := context.Background()
	l, err := w.client.Lock(ctx, "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	w.client.Close()
	ps := w.points(t)
	for _, op := range []string{"acquire", "release"} {
		down := ps["redlock.node.duration{redlock.node=1,redlock.op="+op+",redlock.outcome=error}"] +
			ps["redlock.node.duration{redlock.node=1,redlock.op="+op+",redlock.outcome=timeout}"]
		up := ps["redlock.node.duration{redlock.node=0,redlock.op="+op+",redlock.outcome=ok}"]
		if down != 1 || up != 1 {
			t.Fatalf("%s: node 1 failed %v times, node 0 succeeded %v times:\n\t%s", op, down, up, strings.Join(lines(ps), "\n\t"))
		}
	}
}

// A lock lost while Do's fn runs (its key gone from every node) counts in redlock.lost.
func TestLostUnderDo(t *testing.T) {
	w := newWorld(t, 3, nil, redlock.WithRetryDelay(time.Millisecond, 2*time.Millisecond))
	ctx := context.Background()
	err := w.client.Do(ctx, "k", 300*time.Millisecond, func(ctx context.Context) error {
		for _, m := range w.nodes {
			m.Del("k")
		}
		<-ctx.Done()
		return nil
	})
	if !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Do = %v, want ErrNotHeld", err)
	}
	w.client.Close()
	// Lost either when the extension found the key gone or, on a loaded machine, when the
	// validity ran out before the extension: one loss either way.
	want(t, w.points(t), map[string]float64{
		"redlock.lost{redlock.kind=mutex}":          1,
		"redlock.held.duration{redlock.kind=mutex}": 1,
	})
}

// Spans nest under the span in ctx (Do's under it, and Do's Lock, Extend and Unlock under Do),
// carry the call's attributes and a node.reply event per node, and never the token.
func TestSpans(t *testing.T) {
	w := newWorld(t, 3, nil)
	ctx, parent := w.tp.Tracer("test").Start(context.Background(), "parent")
	var token string
	err := w.client.Do(ctx, "k", time.Second, func(ctx context.Context) error {
		// Another caller in the same trace: its context carries Do's span, not Do's lock
		// (with fn's context, TryLock would re-enter the lock).
		other := trace.ContextWithSpan(context.Background(), trace.SpanFromContext(ctx))
		l, err := w.client.TryLock(other, "k", time.Second)
		if err == nil {
			token = l.Token()
		}
		// Do extends the lock when a third of the ttl is left: wait for that.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			for _, s := range w.spans.Ended() {
				if s.Name() == "redlock.Extend" {
					return nil
				}
			}
			if time.Now().After(deadline) {
				return errors.New("no extension after 10s")
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := w.client.Lock(ctx, "k2", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	token = l.Token()
	l.Unlock(ctx)
	parent.End()
	w.client.Close()

	spans := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range w.spans.Ended() {
		spans[s.Name()] = append(spans[s.Name()], s)
	}
	only := func(name string) sdktrace.ReadOnlySpan {
		t.Helper()
		if len(spans[name]) == 0 {
			t.Fatalf("no span %s", name)
		}
		return spans[name][0]
	}
	root, do := only("parent"), only("redlock.Do")
	if do.Parent().SpanID() != root.SpanContext().SpanID() {
		t.Error("redlock.Do is not a child of the span in ctx")
	}
	for _, name := range []string{"redlock.TryLock", "redlock.Extend"} {
		if s := only(name); s.Parent().SpanID() != do.SpanContext().SpanID() {
			t.Errorf("%s is not a child of redlock.Do", name)
		}
	}
	if len(spans["redlock.Lock"]) != 2 || len(spans["redlock.Unlock"]) != 2 {
		t.Fatalf("%d Lock and %d Unlock spans, want 2 each", len(spans["redlock.Lock"]), len(spans["redlock.Unlock"]))
	}

	try := only("redlock.TryLock")
	attrs := attribute.NewSet(try.Attributes()...)
	for k, v := range map[attribute.Key]string{
		"redlock.key": "k", "redlock.kind": "mutex", "redlock.quorum": "2",
		"redlock.attempts": "1", "redlock.outcome": "not_acquired",
	} {
		if got, ok := attrs.Value(k); !ok || got.String() != v {
			t.Errorf("TryLock span: %s = %q, want %q", k, got.String(), v)
		}
	}
	// Do holds the key on 2 or 3 nodes: the third may still be taking Do's SET when TryLock
	// asks, so TryLock wins 0 or 1 node, never a quorum.
	if got, _ := attrs.Value("redlock.votes"); got.String() != "0" && got.String() != "1" {
		t.Errorf("TryLock span: redlock.votes = %q, want 0 or 1", got.String())
	}
	if try.Status().Code.String() != "Error" || len(try.Events()) < 3 { // the error and 2 or 3 replies
		t.Errorf("TryLock span: status %v, %d events", try.Status(), len(try.Events()))
	}

	for _, s := range w.spans.Ended() {
		if s.SpanKind() != trace.SpanKindClient && s.Name() != "parent" {
			t.Errorf("%s: kind %v", s.Name(), s.SpanKind())
		}
		check := func(where string, kvs []attribute.KeyValue) {
			for _, kv := range kvs {
				if v := kv.Value.String(); token != "" && strings.Contains(v, token) {
					t.Errorf("%s: %s: %s holds the token", s.Name(), where, kv.Key)
				}
			}
		}
		check("attributes", s.Attributes())
		replies := 0
		for _, e := range s.Events() {
			check(e.Name, e.Attributes)
			if e.Name == "redlock.node.reply" {
				replies++
				if a := attribute.NewSet(e.Attributes...); a.Len() != 3 || !a.HasValue("redlock.node") || !a.HasValue("redlock.op") || !a.HasValue("redlock.outcome") {
					t.Errorf("%s: node.reply with %v", s.Name(), e.Attributes)
				}
			}
		}
		// Do's Unlock may have had a reply handed over by its acquisition's straggler.
		if s.Name() != "parent" && s.Name() != "redlock.Do" && replies < 1 {
			t.Errorf("%s: no node.reply event", s.Name())
		}
	}
}

func TestWithoutKeys(t *testing.T) {
	w := newWorld(t, 3, []redlockotel.Option{redlockotel.WithoutKeys()})
	ctx := context.Background()
	l, err := w.client.Lock(ctx, "secret-key", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l.Unlock(ctx)
	w.client.Close()
	for _, s := range w.spans.Ended() {
		for _, kv := range s.Attributes() {
			if kv.Key == "redlock.key" || strings.Contains(kv.Value.String(), "secret-key") {
				t.Errorf("%s: %s = %s", s.Name(), kv.Key, kv.Value.String())
			}
		}
	}
}

func TestBadOptions(t *testing.T) {
	mp, _, tp, _ := providers()
	defer mp.Shutdown(context.Background())
	defer tp.Shutdown(context.Background())
	w := newWorld(t, 1, nil)
	nodes := []redis.UniversalClient{redisClient(t, w.nodes[0].Addr())}
	for name, opt := range map[string]redlockotel.Option{
		"nil meter provider":  redlockotel.WithMeterProvider(nil),
		"nil tracer provider": redlockotel.WithTracerProvider(nil),
		"nil option":          nil,
	} {
		if _, err := redlockotel.Observer(opt); err == nil || !strings.HasPrefix(err.Error(), "redlock: ") {
			t.Errorf("%s: Observer = %v; want an error", name, err)
		}
	}
	for _, opts := range [][]redlockotel.Option{nil, {redlockotel.WithMeterProvider(mp), redlockotel.WithTracerProvider(tp)}} {
		obs, err := redlockotel.Observer(opts...) // nil: the global providers
		if err != nil {
			t.Fatal(err)
		}
		c, err := redlock.New(nodes, redlock.WithObserver(obs))
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
}
