package redlockrueidis

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// A batcher writes a node's calls together under load, in one DoMulti a batch. A call that finds
// no batch in flight, and fewer than maxAlone calls, goes out at once on its own, as if there
// were no batcher; calls that arrive otherwise wait, then the first of them hands them all to a
// batch once a call or the batch in flight is answered, and so on: one batch at a time. So a lone
// caller is never delayed, and many concurrent callers cost the node one read and one write a
// batch where rueidis's own pipelining, which writes whatever is queued whenever its writer is
// free, costs it several.
//
// A caller whose ctx ends while its call waits in the queue takes it out and returns ctx's
// error: the call is never sent. One whose call is in flight returns ctx's error at once too; the
// call stays queued on its connection, in order, as with inOrder. A batch runs on a goroutine of
// its own until its replies come or the latest deadline of its calls passes, so that no caller
// waits for it past its own deadline.
type batcher struct {
	client rueidis.Client

	mu       sync.Mutex
	alone    int          // calls sent on their own and in flight
	batching bool         // a batch is in flight, or handed to its sender
	queue    []*batchCall // calls waiting for a batch, in order of arrival
}

// A batchCall is one call waiting in a batcher's queue.
type batchCall struct {
	ctx   context.Context
	cmd   rueidis.Completed
	res   rueidis.RedisResult // set before ready receives the reply
	lead  bool                // set when handed the queue to send
	ready chan struct{}       // receives when lead is set, and when res is
}

// maxAlone is how many calls a batcher sends on their own at once, while no batch is in flight.
const maxAlone = 2

// maxBatch bounds a batch: rueidis sends a DoMulti of as many commands as its
// ClientOption.BlockingPipeline (2000 by default) on a connection of its own.
const maxBatch = 256

// do sends cmd, alone or in a batch, and returns its result, or ctx's error. Without a batcher
// (b nil), or without a deadline in ctx, it sends cmd at once with c's Do: a batch ends at the
// latest deadline of its calls.
func (b *batcher) do(ctx context.Context, c rueidis.Client, cmd rueidis.Completed) (rueidis.RedisResult, error) {
	if _, ok := ctx.Deadline(); b == nil || !ok {
		return c.Do(inOrder(ctx), cmd), nil
	}
	call := b.enter(ctx, cmd)
	if call == nil {
		defer b.sentAlone()
		return b.client.Do(inOrder(ctx), cmd), nil
	}
	return b.wait(call)
}

// enter returns nil when no batch and fewer than maxAlone calls were in flight: the caller then
// sends cmd itself at once and calls sentAlone. Otherwise it queues cmd and returns its
// batchCall, to wait on. Both in one hold of the lock, or a call in flight could end in between,
// find the queue empty and hand nothing on, and the queued call would wait out its ctx.
func (b *batcher) enter(ctx context.Context, cmd rueidis.Completed) *batchCall {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.batching && b.alone < maxAlone {
		b.alone++
		return nil
	}
	call := &batchCall{ctx: ctx, cmd: cmd, ready: make(chan struct{}, 1)}
	b.queue = append(b.queue, call)
	return call
}

// wait waits, with call queued, until its reply came, or returns ctx's error. Handed the queue,
// it starts the batch and waits on.
func (b *batcher) wait(call *batchCall) (rueidis.RedisResult, error) {
	for {
		select {
		case <-call.ready:
			b.mu.Lock()
			lead := call.lead
			call.lead = false
			b.mu.Unlock()
			if !lead {
				return call.res, nil
			}
			b.send()
		case <-call.ctx.Done():
			b.mu.Lock()
			lead := call.lead
			if i := slices.Index(b.queue, call); i >= 0 { // not sent yet: never will be
				b.queue = slices.Delete(b.queue, i, i+1)
			}
			b.mu.Unlock()
			if lead { // handed the queue as it gave up: the others' batch goes on
				b.send()
			}
			return rueidis.RedisResult{}, call.ctx.Err()
		}
	}
}

// send hands every queued call to a batch on a goroutine of its own, which wakes their callers
// with the replies and hands on what queued meanwhile.
func (b *batcher) send() {
	b.mu.Lock()
	n := min(len(b.queue), maxBatch)
	batch := slices.Clone(b.queue[:n])
	b.queue = slices.Delete(b.queue, 0, n)
	b.mu.Unlock()
	if len(batch) == 0 { // every caller gave up before its turn
		b.sentBatch()
		return
	}
	go b.run(batch)
}

// run is a batch's goroutine. It hands the queue on before it wakes the callers, so that the
// batcher is idle once every call has returned.
func (b *batcher) run(batch []*batchCall) {
	cmds := make([]rueidis.Completed, len(batch))
	var last time.Time
	for i, c := range batch {
		cmds[i] = c.cmd
		if d, ok := c.ctx.Deadline(); ok && d.After(last) {
			last = d
		}
	}
	ctx := context.Background()
	if !last.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, last)
		defer cancel()
	}
	res := b.client.DoMulti(inOrder(ctx), cmds...)
	for i, c := range batch {
		c.res = res[i]
	}
	b.sentBatch()
	for _, c := range batch {
		c.ready <- struct{}{}
	}
}

// sentAlone ends a call sent on its own: the queue goes on as a batch unless one is on its way.
func (b *batcher) sentAlone() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.alone--
	if !b.batching {
		b.handOn()
	}
}

// sentBatch ends a batch: the queue, if any, goes on as the next one.
func (b *batcher) sentBatch() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.batching = false
	b.handOn()
}

// handOn hands the queue, if any, to its first caller to send as a batch. b.mu is held.
func (b *batcher) handOn() {
	if len(b.queue) == 0 {
		return
	}
	b.batching = true
	b.queue[0].lead = true
	b.queue[0].ready <- struct{}{}
}
