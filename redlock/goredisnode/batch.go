package goredisnode

import (
	"context"
	"slices"
	"sync"

	"github.com/redis/go-redis/v9"
)

// A batcher writes the calls of a Client to one node together under load. A call that finds
// no batch of the Client in flight to the node, and fewer than maxAlone calls, goes out at
// once, on its own, as if there were no batcher; calls that arrive otherwise wait, then the
// first of them sends them all in one pipeline (one write, one read) once a call or the batch
// in flight is answered, and so on: one batch at a time. So a lone caller is never delayed, nor
// one that follows the straggler of another round (a release still in flight after its round
// decided), and many concurrent callers cost the node one round trip a batch.
//
// A caller whose ctx ends while its call waits in the queue takes it out and returns ctx's
// error: the call is never sent. One whose call is in flight returns ctx's error at once too;
// the call may still reach the node, as with any timed-out call. So no call waits behind a
// stuck batch longer than its own context allows; the batch ends by go-redis's timeouts.
type batcher struct {
	node *redis.Client

	mu       sync.Mutex
	alone    int             // calls sent on their own and in flight
	batching bool            // a batch is in flight, or handed to its sender
	queue    []*batchCall    // calls waiting for a batch, in order of arrival
	pipe     redis.Pipeliner // the one batch's, reused: go-redis empties it on Exec
	free     []*batchCall    // calls to reuse
}

// A batchCall is one call waiting in a batcher's queue.
type batchCall struct {
	ctx   context.Context
	cmd   redis.Cmder
	lead  bool          // set when handed the queue to send
	ready chan struct{} // receives when cmd has its reply, or lead is set
}

// maxAlone is how many calls a batcher sends on their own at once, while no batch is in flight.
const maxAlone = 2

// maxFree bounds the batchCalls a batcher keeps for reuse.
const maxFree = 64

// call returns a batchCall to fill in, reused when one is free; b.mu is held. The free list is
// the batcher's own, not a process-wide sync.Pool: a channel made inside a testing/synctest
// bubble (the simulator's) must not be used outside it.
func (b *batcher) call() *batchCall {
	if n := len(b.free); n > 0 {
		c := b.free[n-1]
		b.free = b.free[:n-1]
		return c
	}
	return &batchCall{ready: make(chan struct{}, 1)}
}

// recycle keeps c for reuse once its caller is done with it.
func (b *batcher) recycle(c *batchCall) {
	*c = batchCall{ready: c.ready}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.free) < maxFree {
		b.free = append(b.free, c)
	}
}

// process sends cmd, alone or in a batch, and returns its error or ctx's.
func (b *batcher) process(ctx context.Context, cmd redis.Cmder) error {
	call := b.enter(ctx, cmd)
	if call == nil {
		defer b.sentAlone()
		return b.node.Process(ctx, cmd)
	}
	if err := b.wait(call); err != nil {
		return err
	}
	return cmd.Err()
}

// enter returns nil when no batch and fewer than maxAlone calls were in flight: the caller then
// sends cmd itself at once and calls sentAlone. Otherwise it queues cmd and returns its
// batchCall, to wait on. Both in one hold of the lock: a call that found the node busy and
// queued only after letting go of it would miss the calls in flight ending meanwhile, which
// find the queue empty and hand nothing on; nobody would then hand it the queue, and it would
// wait until its ctx ended (a node timeout with no reply from a node that answers at once).
func (b *batcher) enter(ctx context.Context, cmd redis.Cmder) *batchCall {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.batching && b.alone < maxAlone {
		b.alone++
		return nil
	}
	call := b.call()
	call.ctx, call.cmd = ctx, cmd
	b.queue = append(b.queue, call)
	return call
}

// wait waits, with call queued, until its command has its reply, or returns ctx's error.
func (b *batcher) wait(call *batchCall) error {
	select {
	case <-call.ready:
	case <-call.ctx.Done():
		b.mu.Lock()
		select {
		case <-call.ready: // it came in the meantime
			b.mu.Unlock()
		default:
			i := slices.Index(b.queue, call)
			if i >= 0 { // not sent yet: never will be
				b.queue = slices.Delete(b.queue, i, i+1)
			}
			b.mu.Unlock()
			err := call.ctx.Err()
			if i >= 0 {
				b.recycle(call)
			} // else its batch still holds it
			return err
		}
	}
	if call.lead {
		b.send()
	}
	b.recycle(call)
	return nil
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

// send writes every queued call in one pipeline, wakes their callers with the replies, and
// hands on what queued meanwhile. The pipeline serves many callers, so it does not end with the
// sender's ctx; go-redis's timeouts bound it.
func (b *batcher) send() {
	b.mu.Lock()
	batch := b.queue
	b.queue = nil
	if b.pipe == nil {
		b.pipe = b.node.Pipeline()
	}
	b.mu.Unlock()

	for _, c := range batch {
		b.pipe.Process(c.ctx, c.cmd)
	}
	b.pipe.Exec(context.WithoutCancel(batch[0].ctx)) // each command carries its own error
	for _, c := range batch[1:] {                    // batch[0] is the sender
		c.ready <- struct{}{}
	}
	b.sentBatch()
}
