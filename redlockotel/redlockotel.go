// Package redlockotel reports what a redlock.Client does as OpenTelemetry metrics and spans:
// how long acquisitions take and how they end, each node's calls, how long locks are held,
// locks lost while held, and calls waiting now.
//
//	obs, err := redlockotel.Observer()
//	...
//	c, err := redlock.New(nodes, redlock.WithObserver(obs))
//
// Metrics (meter and tracer named ScopeName):
//
//	redlock.acquire.duration  histogram, s        redlock.outcome, redlock.kind
//	redlock.acquire.attempts  counter, {attempt}  redlock.outcome
//	redlock.node.duration     histogram, s        redlock.node, redlock.op, redlock.outcome
//	redlock.held.duration     histogram, s        redlock.kind
//	redlock.lost              counter, {lock}     redlock.kind
//	redlock.waiting           up-down counter, {call}
//
// An acquiring call is a Lock or TryLock of any kind (RLock, LockAll and a Semaphore's count as
// Lock and TryLock of their kind), and Do's acquisition. Its outcome is acquired, not_acquired
// (it returned ErrNotAcquired: refused, or no quorum for any reason), canceled (its context
// ended) or error (anything else: bad input, a closed Client). A call waits from its first
// refusal until it returns. A lock is lost when its validity ended while it was held.
//
// Spans redlock.Lock, redlock.TryLock, redlock.Extend, redlock.Unlock and redlock.Do are
// children of the span in the call's context, with the attributes redlock.kind, redlock.key
// (unless WithoutKeys), redlock.quorum, redlock.votes (of the last round), redlock.attempts and
// redlock.outcome, an event redlock.node.reply for each node reply that came before the call
// returned, and the error recorded.
// No token and no password appears in any attribute or event.
package redlockotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/quorumlock/redlock/redlock/locktrace"
)

// ScopeName names the meter and the tracer.
const ScopeName = "github.com/quorumlock/redlock/redlockotel"

// An Option configures Observer.
type Option func(*config) error

type config struct {
	mp     metric.MeterProvider
	tp     trace.TracerProvider
	noKeys bool
}

// WithMeterProvider sets where the metrics go. Default otel.GetMeterProvider().
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) error {
		if mp == nil {
			return errors.New("redlock: redlockotel: nil MeterProvider")
		}
		c.mp = mp
		return nil
	}
}

// WithTracerProvider sets where the spans go. Default otel.GetTracerProvider().
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) error {
		if tp == nil {
			return errors.New("redlock: redlockotel: nil TracerProvider")
		}
		c.tp = tp
		return nil
	}
}

// WithoutKeys leaves the redlock.key attribute out of spans, for keys that are sensitive or
// too many. Default: spans carry the key as given (LockAll's first key), without the prefix.
func WithoutKeys() Option {
	return func(c *config) error {
		c.noKeys = true
		return nil
	}
}

// Observer returns the hooks that report a Client's calls as metrics and spans: give them to
// redlock.New with redlock.WithObserver. It fails on a nil Option or provider, and when an
// instrument cannot be created.
func Observer(opts ...Option) (locktrace.Observer, error) {
	o, err := newObserver(opts...)
	if err != nil {
		return locktrace.Observer{}, err
	}
	return locktrace.Observer{Begin: o.Begin, Round: o.Round, NodeReply: o.NodeReply,
		Waiting: o.waitBegins, Waited: o.waited, End: o.End, Ended: o.Ended}, nil
}

// Attribute keys.
const (
	keyKind     = attribute.Key("redlock.kind")
	keyOutcome  = attribute.Key("redlock.outcome")
	keyNode     = attribute.Key("redlock.node")
	keyOp       = attribute.Key("redlock.op")
	keyKey      = attribute.Key("redlock.key")
	keyQuorum   = attribute.Key("redlock.quorum")
	keyVotes    = attribute.Key("redlock.votes")
	keyAttempts = attribute.Key("redlock.attempts")
)

// The names of outcomes: of an acquiring call or attempt, and of any other call.
var (
	acquireOutcomes = [...]string{
		locktrace.OutcomeOK: "acquired", locktrace.OutcomeRefused: "not_acquired",
		locktrace.OutcomeCanceled: "canceled", locktrace.OutcomeError: "error",
	}
	otherOutcomes = [...]string{
		locktrace.OutcomeOK: "ok", locktrace.OutcomeRefused: "not_held",
		locktrace.OutcomeCanceled: "canceled", locktrace.OutcomeError: "error",
	}
)

// Every kind and outcome, for the attribute sets made once.
const (
	kinds    = int(locktrace.KindElection) + 1
	outcomes = int(locktrace.OutcomeError) + 1
)

// Histogram buckets, in seconds: calls from a millisecond to ten seconds, node calls from a
// tenth of a millisecond to a second, holdings from ten milliseconds to ten minutes.
var (
	callBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
	nodeBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}
	heldBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
)

// observer makes the hooks that Observer returns.
type observer struct {
	tracer trace.Tracer
	noKeys bool

	acquireDuration metric.Float64Histogram
	attempts        metric.Int64Counter
	nodeDuration    metric.Float64Histogram
	heldDuration    metric.Float64Histogram
	lost            metric.Int64Counter
	waiting         metric.Int64UpDownCounter

	// Attribute sets made once: by kind and outcome, by outcome, by kind.
	byKindOutcome [kinds][outcomes]metric.MeasurementOption
	byOutcome     [outcomes]metric.MeasurementOption
	byKind        [kinds]metric.MeasurementOption
}

func newObserver(opts ...Option) (*observer, error) {
	var cfg config
	for _, opt := range opts {
		if opt == nil {
			return nil, errors.New("redlock: redlockotel: nil Option")
		}
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.mp == nil {
		cfg.mp = otel.GetMeterProvider()
	}
	if cfg.tp == nil {
		cfg.tp = otel.GetTracerProvider()
	}
	m := cfg.mp.Meter(ScopeName)
	o := &observer{tracer: cfg.tp.Tracer(ScopeName), noKeys: cfg.noKeys}
	var errs [6]error
	o.acquireDuration, errs[0] = m.Float64Histogram("redlock.acquire.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from an acquiring call to its return, waits included."),
		metric.WithExplicitBucketBoundaries(callBuckets...))
	o.attempts, errs[1] = m.Int64Counter("redlock.acquire.attempts", metric.WithUnit("{attempt}"),
		metric.WithDescription("Rounds of acquisition, each asking every node."))
	o.nodeDuration, errs[2] = m.Float64Histogram("redlock.node.duration", metric.WithUnit("s"),
		metric.WithDescription("Time of one node's call, from sending to its reply or its end."),
		metric.WithExplicitBucketBoundaries(nodeBuckets...))
	o.heldDuration, errs[3] = m.Float64Histogram("redlock.held.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from an acquisition to its release or loss."),
		metric.WithExplicitBucketBoundaries(heldBuckets...))
	o.lost, errs[4] = m.Int64Counter("redlock.lost", metric.WithUnit("{lock}"),
		metric.WithDescription("Locks whose validity ended while they were held."))
	o.waiting, errs[5] = m.Int64UpDownCounter("redlock.waiting", metric.WithUnit("{call}"),
		metric.WithDescription("Acquiring calls waiting now: from their first refusal until they return."))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, errors.Join(errors.New("redlock: redlockotel: creating the instruments"), err)
	}
	for k := range kinds {
		kind := keyKind.String(locktrace.Kind(k).String())
		o.byKind[k] = metric.WithAttributeSet(attribute.NewSet(kind))
		for out := range outcomes {
			o.byKindOutcome[k][out] = metric.WithAttributeSet(attribute.NewSet(kind, keyOutcome.String(acquireOutcomes[out])))
		}
	}
	for out := range outcomes {
		o.byOutcome[out] = metric.WithAttributeSet(attribute.NewSet(keyOutcome.String(acquireOutcomes[out])))
	}
	// Series that show 0 from the start rather than nothing until the first loss or wait.
	ctx := context.Background()
	for k := range kinds {
		o.lost.Add(ctx, 0, o.byKind[k])
	}
	o.waiting.Add(ctx, 0)
	return o, nil
}

// A call is what the observer keeps of a call in progress, in the call's context. Round, Wait
// and End come from the call's goroutine, one after the other: its fields need no lock.
type call struct {
	span     trace.Span
	op       locktrace.Op
	attempts int
	votes    int
	waiting  bool
}

type callKey struct{}

// acquiring reports whether op acquires.
func acquiring(op locktrace.Op) bool { return op == locktrace.OpLock || op == locktrace.OpTryLock }

func (o *observer) Begin(ctx context.Context, c locktrace.Call) context.Context {
	attrs := make([]attribute.KeyValue, 0, 3)
	attrs = append(attrs, keyKind.String(c.Kind.String()), keyQuorum.Int(c.Quorum))
	if !o.noKeys {
		attrs = append(attrs, keyKey.String(c.Key))
	}
	ctx, span := o.tracer.Start(ctx, "redlock."+c.Op.String(), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return context.WithValue(ctx, callKey{}, &call{span: span, op: c.Op})
}

func (o *observer) Round(ctx context.Context, r locktrace.Round) {
	c, ok := ctx.Value(callKey{}).(*call)
	if !ok {
		return // Resume's round: no call of ours
	}
	c.attempts++
	c.votes = r.Votes
	if acquiring(c.op) {
		o.attempts.Add(ctx, 1, o.byOutcome[r.Outcome])
	}
}

func (o *observer) NodeReply(ctx context.Context, r locktrace.NodeReply) {
	attrs := [3]attribute.KeyValue{keyNode.Int(r.Node), keyOp.String(r.Op.String()), keyOutcome.String(r.Outcome.String())}
	o.nodeDuration.Record(ctx, r.Elapsed.Seconds(), metric.WithAttributes(attrs[:]...))
	if c, ok := ctx.Value(callKey{}).(*call); ok {
		c.span.AddEvent("redlock.node.reply", trace.WithAttributes(attrs[:]...))
	}
}

func (o *observer) waitBegins(ctx context.Context, _ locktrace.Call) {
	c, ok := ctx.Value(callKey{}).(*call)
	if !ok || c.waiting {
		return
	}
	c.waiting = true
	o.waiting.Add(ctx, 1)
	c.span.AddEvent("redlock.wait")
}

func (o *observer) waited(ctx context.Context, _ locktrace.Call) {
	c, ok := ctx.Value(callKey{}).(*call)
	if !ok || !c.waiting {
		return
	}
	c.waiting = false
	o.waiting.Add(ctx, -1)
}

func (o *observer) End(ctx context.Context, rc locktrace.Call, r locktrace.Return) {
	c, ok := ctx.Value(callKey{}).(*call)
	if !ok {
		return
	}
	if c.waiting { // the core reports the wait's end; never leave the gauge up
		o.waited(ctx, rc)
	}
	outcome := otherOutcomes[r.Outcome]
	if acquiring(rc.Op) {
		outcome = acquireOutcomes[r.Outcome]
		o.acquireDuration.Record(ctx, r.Elapsed.Seconds(), o.byKindOutcome[rc.Kind][r.Outcome])
	}
	c.span.SetAttributes(keyOutcome.String(outcome), keyVotes.Int(c.votes), keyAttempts.Int(c.attempts))
	if r.Err != nil {
		c.span.RecordError(r.Err)
		c.span.SetStatus(codes.Error, outcome)
	}
	c.span.End()
}

func (o *observer) Ended(h locktrace.Holding) {
	ctx := context.Background()
	o.heldDuration.Record(ctx, h.Held.Seconds(), o.byKind[h.Kind])
	if h.Lost {
		o.lost.Add(ctx, 1, o.byKind[h.Kind])
	}
}
