package bench

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"math/bits"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The floor is the least work any Redlock over go-redis must do, written here as the bar the
// library is measured against: SET NX PX to every node at once, a decision at the first
// majority of replies, and an EVALSHA compare-and-delete on the nodes that took the key
// (those whose reply had not come yet are released once it comes). It has no per-node
// timeout, no retries, no error detail and no options: a library offers all of those, so it
// can approach the floor but should not beat it by much.
type floor struct {
	nodes  []redis.UniversalClient
	quorum int
	sha    string
	wg     sync.WaitGroup // the goroutines still talking to nodes
}

const floorRelease = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`

var errFloorNotAcquired = errors.New("floor: not acquired")

func newFloorLocker(b *testing.B, nodes []redis.UniversalClient) locker {
	f := &floor{nodes: nodes, quorum: len(nodes)/2 + 1}
	for _, n := range nodes {
		sha, err := n.ScriptLoad(context.Background(), floorRelease).Result()
		if err != nil {
			b.Fatal(err)
		}
		f.sha = sha
	}
	return f
}

type floorReply struct {
	node int
	ok   bool
}

// A floorLock is one acquisition: the nodes that said yes (a bit each) and the replies
// that had not come when the majority decided.
type floorLock struct {
	key, token string
	yes        uint64
	pending    int
	replies    chan floorReply
}

func (f *floor) lock(ctx context.Context, key string) (any, error) {
	var raw [16]byte
	rand.Read(raw[:])
	l := &floorLock{key: key, token: base64.RawURLEncoding.EncodeToString(raw[:]),
		pending: len(f.nodes), replies: make(chan floorReply, len(f.nodes))}
	start := time.Now()
	for i, n := range f.nodes {
		f.wg.Add(1)
		go func() { // not wg.Go: its wrapper costs an allocation a node
			defer f.wg.Done()
			ok, err := n.SetNX(ctx, key, l.token, ttl).Result()
			l.replies <- floorReply{i, ok && err == nil}
		}()
	}
	for no := 0; l.pending > 0 && no <= len(f.nodes)-f.quorum; {
		r := <-l.replies
		l.pending--
		if !r.ok {
			no++
			continue
		}
		l.yes |= 1 << r.node
		if bits.OnesCount64(l.yes) == f.quorum {
			break
		}
	}
	if bits.OnesCount64(l.yes) < f.quorum || time.Since(start) >= ttl-ttl/100-2*time.Millisecond {
		f.unlock(ctx, l)
		return nil, errFloorNotAcquired
	}
	return l, nil
}

func (f *floor) unlock(ctx context.Context, h any) error {
	l := h.(*floorLock)
	released := make(chan bool, len(f.nodes))
	asked := l.pending
	for i, n := range f.nodes {
		if l.yes&(1<<i) != 0 {
			asked++
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				released <- f.release(ctx, n, l)
			}()
		}
	}
	if pending := l.pending; pending > 0 {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			for range pending {
				r := <-l.replies
				released <- r.ok && f.release(ctx, f.nodes[r.node], l)
			}
		}()
	}
	ok := 0
	for failed := 0; ok < f.quorum && asked-failed >= f.quorum; {
		if <-released {
			ok++
		} else {
			failed++
		}
	}
	if ok < f.quorum {
		return errors.New("floor: released on less than a majority")
	}
	return nil
}

func (f *floor) release(ctx context.Context, n redis.UniversalClient, l *floorLock) bool {
	v, err := n.EvalSha(ctx, f.sha, []string{l.key}, l.token).Int()
	return err == nil && v == 1
}

func (f *floor) close() { f.wg.Wait() }
