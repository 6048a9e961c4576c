package redlock

import (
	"context"
	"slices"
	"sync"

	"github.com/redis/go-redis/v9"
)

// A batcher writes the calls of a Client to one node together under load. A call that finds
// no other call of the Client in flight to the node goes out at once, on its own, as if there
// were no batcher; calls that arrive while one is in flight wait for it, then the first of them
// sends them all in one pipeline (one write, one read), and so on. So a lone caller is never
// delayed, many concurrent callers cost the node one round trip a batch, and the node sees
// this Client's calls in the order they were made: a release never overtakes its own SET.
//
// A caller whose ctx ends while its call waits in the queue takes it out and returns ctx's
// error: the call is never sent. One whose call is in flight returns ctx's error at once too;
// the call may still reach the node, as with any timed-out call.
type batcher struct {
	node redis.UniversalClient

	mu    sync.Mutex
	busy  bool            // a call or a batch is in flight
	queue []*batchCall    // calls waiting for it, in order of arrival
	pipe  redis.Pipeliner // the one batch's, reused: go-redis empties it on Exec
	free  []*batchCall    // calls to reuse
}

// A batchCall is one call waiting in a batcher's queue: Process's, or EVALSHA or EVAL.
type batchCall struct {
	ctx     context.Context
	process bool   // Process's cmd, rather than a script
	sha     bool   // EVALSHA rather than EVAL
	script  string // the script or its SHA1
	keys    []string
	args    []any

	// Its command once added to the pipeline; Process's from the start, a stand-in for the
	// caller's (see newLike), which a call that gave up would share with the batch.
	cmd   redis.Cmder
	lead  bool          // set when handed the queue to send
	ready chan struct{} // receives when cmd has its reply, or lead is set
}

// maxFree bounds the batchCalls a batcher keeps for reuse.
const maxFree = 64

// call returns a batchCall to fill in, reused when one is free. The free list is the batcher's
// own, not a process-wide sync.Pool: a channel made inside a testing/synctest bubble (the
// simulator's) must not be used outside it.
func (b *batcher) call() *batchCall {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n := len(b.free); n > 0 {
		c := b.free[n-1]
		b.free = b.free[:n-1]
		return c
	}
	return &batchCall{ready: make(chan struct{}, 1)}
}

// recycle keeps c for reuse once its caller has read the reply.
func (b *batcher) recycle(c *batchCall) {
	*c = batchCall{ready: c.ready}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.free) < maxFree {
		b.free = append(b.free, c)
	}
}

// add puts the call on the pipeline.
func (c *batchCall) add(p redis.Pipeliner) redis.Cmder {
	switch {
	case c.process:
		p.Process(c.ctx, c.cmd)
		return c.cmd
	case c.sha:
		return p.EvalSha(c.ctx, c.script, c.keys, c.args...)
	default:
		return p.Eval(c.ctx, c.script, c.keys, c.args...)
	}
}

var _ conn = (*batcher)(nil)

// enter reports whether nothing was in flight, in which case the caller sends its call itself
// at once and then calls next.
func (b *batcher) enter() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.busy {
		return false
	}
	b.busy = true
	return true
}

// wait queues call behind the one in flight and returns its command once it has its reply, or
// ctx's error.
func (b *batcher) wait(ctx context.Context, call *batchCall) (redis.Cmder, error) {
	call.ctx = ctx
	b.mu.Lock()
	b.queue = append(b.queue, call)
	b.mu.Unlock()

	select {
	case <-call.ready:
	case <-ctx.Done():
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
			if i >= 0 {
				b.recycle(call)
			} // else its batch still holds it
			return nil, ctx.Err()
		}
	}
	if call.lead {
		b.send()
	}
	cmd := call.cmd
	b.recycle(call)
	return cmd, nil
}

// next hands the queue, if any, to its first caller to send; else the node is idle again.
func (b *batcher) next() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		b.busy = false
		return
	}
	b.queue[0].lead = true
	b.queue[0].ready <- struct{}{}
}

// send writes every queued call in one pipeline, wakes their callers with the replies, and
// hands on what queued meanwhile. The pipeline serves many callers, so it does not end with the
// sender's ctx; go-redis's own timeouts bound it.
func (b *batcher) send() {
	b.mu.Lock()
	batch := b.queue
	b.queue = nil
	if b.pipe == nil {
		b.pipe = b.node.Pipeline()
	}
	b.mu.Unlock()

	for _, c := range batch {
		c.cmd = c.add(b.pipe)
	}
	b.pipe.Exec(context.WithoutCancel(batch[0].ctx)) // each command carries its own error
	for _, c := range batch[1:] {                    // batch[0] is the sender
		c.ready <- struct{}{}
	}
	b.next()
}

func (b *batcher) Process(ctx context.Context, cmd redis.Cmder) error {
	if b.enter() {
		defer b.next()
		return b.node.Process(ctx, cmd)
	}
	call := b.call()
	call.process, call.cmd = true, newLike(ctx, cmd, cmd.Args())
	got, err := b.wait(ctx, call)
	if err != nil {
		cmd.SetErr(err)
		return err
	}
	copyReply(cmd, got)
	return cmd.Err()
}

func (b *batcher) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	if b.enter() {
		defer b.next()
		return b.node.EvalSha(ctx, sha1, keys, args...)
	}
	call := b.call()
	call.sha, call.script, call.keys, call.args = true, sha1, keys, args
	return queuedCmd(b.wait(ctx, call))
}

func (b *batcher) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	if b.enter() {
		defer b.next()
		return b.node.Eval(ctx, script, keys, args...)
	}
	call := b.call()
	call.script, call.keys, call.args = script, keys, args
	return queuedCmd(b.wait(ctx, call))
}

// queuedCmd is the command of a queued call, or one that failed with the error wait returned.
func queuedCmd(got redis.Cmder, err error) *redis.Cmd {
	if err != nil {
		cmd := redis.NewCmd(context.Background())
		cmd.SetErr(err)
		return cmd
	}
	return got.(*redis.Cmd)
}

func (b *batcher) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return b.node.EvalRO(ctx, script, keys, args...)
}

func (b *batcher) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return b.node.EvalShaRO(ctx, sha1, keys, args...)
}

func (b *batcher) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	return b.node.ScriptExists(ctx, hashes...)
}

func (b *batcher) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	return b.node.ScriptLoad(ctx, script)
}

func (b *batcher) Subscribe(ctx context.Context, channels ...string) *redis.PubSub {
	return b.node.Subscribe(ctx, channels...)
}
