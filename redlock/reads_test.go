package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/redlock"
)

// readServers starts n redis-server processes and a Client over them with go-redis's default
// clients, which it returns too, and the node timeout d.
func readServers(t *testing.T, n int, d time.Duration) ([]*redistest.Server, []redis.UniversalClient, *redlock.Client) {
	t.Helper()
	ss := redistest.StartN(t, n)
	nodes := redistest.Clients(t, redistest.Addrs(ss)...)
	c, err := redlock.New(nodes, redlock.WithNodeTimeout(d))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return ss, nodes, c
}

// failsAtOnce waits until calls through c, whose server was killed, fail at once: go-redis
// redials a dead server (5 tries, 100ms apart) until as many dials as its pool holds connections
// have failed, and then fails a call at once, as users' default clients do under a killed node.
func failsAtOnce(t *testing.T, c redis.UniversalClient) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		start := time.Now()
		err := c.Process(ctx, pingOnce{redis.NewStatusCmd(ctx, "ping")})
		fast := err != nil && ctx.Err() == nil && time.Since(start) < 10*time.Millisecond
		cancel()
		if fast {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls to the killed node still do not fail at once after 30s: %v", err)
		}
	}
}

// comesBack restarts s, killed, and waits until c reaches it: go-redis's goroutine that
// redials a dead server ends then.
func comesBack(t *testing.T, s *redistest.Server, c redis.UniversalClient) {
	t.Helper()
	s.Restart(t)
	redistest.Eventually(t, "the restarted node answers", func() bool { return c.Ping(context.Background()).Err() == nil })
}

// pingOnce is a PING that go-redis does not retry, as the library sends its commands.
type pingOnce struct{ *redis.StatusCmd }

func (pingOnce) NoRetry() bool { return true }

// firstLeader returns the first Leader that a new Observe of e delivers within d.
func firstLeader(e *redlock.Election, d time.Duration) (redlock.Leader, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := e.Observe(ctx)
	defer func() {
		cancel()
		for range ch { // until Observe has ended
		}
	}()
	select {
	case l, ok := <-ch:
		if !ok {
			return redlock.Leader{}, errors.New("the channel closed")
		}
		return l, nil
	case <-time.After(d):
		return redlock.Leader{}, fmt.Errorf("nothing delivered in %v", d)
	}
}

// A read answers from every node that answers within the node timeout: one node refusing
// connections (killed: once go-redis stops redialling it, its errors come at once) does not end
// the read before the others answered. With a second node stopped, a read still shows what the third holds, and names
// each failure as it is.
func TestReadsAnswerWithANodeKilled(t *testing.T) {
	t.Parallel()
	const timeout = 500 * time.Millisecond
	ss, nodes, c := readServers(t, 3, timeout)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := c.Lock(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.Election("e", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	term, err := e.Campaign(ctx, "leader-1")
	if err != nil {
		t.Fatal(err)
	}
	names, err := wire.NewNames("")
	if err != nil {
		t.Fatal(err)
	}
	k := names.Election("e")
	redistest.Eventually(t, "every node holds the lock and the term", func() bool {
		for _, r := range nodes {
			if n, err := r.Exists(ctx, "k", k.Lock).Result(); err != nil || n != 2 {
				return false
			}
		}
		return true
	})
	// The term's second round, which stores its value, goes to the nodes that said yes first:
	// the node to kill is one without the value, if any, so that the other two hold it.
	dead := 0
	for i, r := range nodes {
		if n, err := r.Exists(ctx, k.Value).Result(); err == nil && n == 0 {
			dead = i
		}
	}
	stopped, alive := (dead+1)%3, (dead+2)%3
	ss[dead].Kill()
	failsAtOnce(t, nodes[dead])
	t.Cleanup(func() { comesBack(t, ss[dead], nodes[dead]) })

	const runs = 10
	var failed []string
	for range runs {
		in, err := c.Inspect(ctx, "k")
		if err != nil || !in.Held || in.Token != l.Token() || in.Nodes[dead].Err == nil || in.Nodes[stopped].Err != nil || in.Nodes[alive].Err != nil {
			failed = append(failed, fmt.Sprintf("Inspect: %+v, %v", in, err))
		}
		if ld, err := e.Leader(ctx); err != nil || ld.Value != "leader-1" || ld.Term != term.Term() {
			failed = append(failed, fmt.Sprintf("Leader: %+v, %v", ld, err))
		}
		if ld, err := firstLeader(e, 2*time.Second); err != nil || ld.Term != term.Term() {
			failed = append(failed, fmt.Sprintf("Observe: %+v, %v", ld, err))
		}
	}
	if len(failed) > 0 {
		t.Fatalf("with node %d killed, %d of %d reads failed; the first:\n%s", dead, len(failed), 3*runs, failed[0])
	}

	ss[stopped].Pause(t)
	for range 3 {
		in, err := c.Inspect(ctx, "k")
		if err != nil || in.Held || in.Nodes[alive].Token != l.Token() || in.Nodes[dead].Err == nil || in.Nodes[stopped].Err == nil ||
			strings.Contains(in.Nodes[dead].Err.Error(), "decided") ||
			!strings.Contains(in.Nodes[stopped].Err.Error(), "no reply within "+timeout.String()) {
			t.Fatalf("with node %d killed and node %d stopped, Inspect: %+v, %v", dead, stopped, in, err)
		}
		_, err = e.Leader(ctx)
		if !errors.Is(err, redlock.ErrNoQuorum) || !strings.Contains(err.Error(), fmt.Sprintf("node %d (", dead)) ||
			!strings.Contains(err.Error(), fmt.Sprintf("node %d (", stopped)) || strings.Contains(err.Error(), fmt.Sprintf("node %d (", alive)) ||
			strings.Contains(err.Error(), "before the others decided") {
			t.Fatalf("with node %d killed and node %d stopped, Leader: %v", dead, stopped, err)
		}
	}
}

// Leader's Until and what Inspect's TTLs say are never later than the nodes keep the keys:
// they count from when the read was sent, not from when the slowest node's answer came (here
// two of five nodes are stopped, so every read waits the whole node timeout).
func TestReadsNeverPromiseMoreThanTheNodesHold(t *testing.T) {
	t.Parallel()
	const ttl = 3 * time.Second
	ss, _, c := readServers(t, 5, 500*time.Millisecond)
	ss[3].Pause(t)
	ss[4].Pause(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := c.Election("e", ttl)
	if err != nil {
		t.Fatal(err)
	}
	term, err := e.Campaign(ctx, "leader-1")
	campaigned := time.Now() // the nodes set the term's keys before: they expire before this + ttl
	if err != nil {
		t.Fatal(err)
	}
	defer term.Resign(ctx)
	latest := campaigned.Add(ttl)
	l, err := e.Leader(ctx)
	if err != nil || l.Term != term.Term() {
		t.Fatalf("Leader: %+v, %v", l, err)
	}
	if l.Until.After(latest) {
		t.Errorf("Leader().Until is %v after the term can last", l.Until.Sub(latest))
	}
	if o, err := firstLeader(e, 2*time.Second); err != nil || o.Until.After(latest) {
		t.Errorf("Observe: %+v, %v: Until %v after the term can last", o, err, o.Until.Sub(latest))
	}

	lock, err := c.Lock(ctx, "k", ttl)
	locked := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock(ctx)
	in, err := c.Inspect(ctx, "k")
	returned := time.Now()
	if err != nil || !in.Held {
		t.Fatalf("Inspect: %+v, %v", in, err)
	}
	for i, n := range in.Nodes[:3] {
		if n.Token != lock.Token() {
			t.Fatalf("node %d: %+v", i, n)
		}
		if over := returned.Add(n.TTL).Sub(locked.Add(ttl)); over > 0 {
			t.Errorf("node %d: the moment Inspect returned + TTL is %v after the key can last", i, over)
		}
	}
}

// An owner is carried intact, whatever printable text it is, or refused by WithOwner: a comma
// would split it, as Inspect joins the owners of a Semaphore's holders with commas.
func TestOwnerCarriedIntactOrRefused(t *testing.T) {
	nodes := redistest.MiniClients(t, redistest.Minis(t, 3))
	ctx := context.Background()
	if c, err := redlock.New(nodes, redlock.WithOwner("web,1 ~x"), redlock.WithNodeTimeout(2*time.Second)); err == nil {
		defer c.Close()
		l, err := c.TryLock(ctx, "k", time.Minute)
		if err != nil {
			t.Fatalf(`WithOwner("web,1 ~x") accepted, then TryLock: %v`, err)
		}
		defer l.Unlock(ctx)
		in, err := c.Inspect(ctx, "k")
		if err != nil {
			t.Fatalf(`WithOwner("web,1 ~x") accepted, then Inspect: %v`, err)
		}
		t.Fatalf(`WithOwner("web,1 ~x") accepted, and Inspect's owner is %q`, in.Owner)
	} else if !strings.Contains(err.Error(), "comma") {
		t.Fatalf("WithOwner with a comma: %v; want an error that says so", err)
	}
	for _, owner := range []string{"web 1 ~x", "~", "a~b~c", "job (pid 42) ~ host:1", "é~ü"} {
		c, err := redlock.New(nodes, redlock.WithOwner(owner), redlock.WithNodeTimeout(2*time.Second))
		if err != nil {
			t.Fatalf("WithOwner(%q): %v", owner, err)
		}
		l, err := c.TryLock(ctx, "k", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		in, err := c.Inspect(ctx, "k")
		if err != nil || in.Owner != owner {
			t.Errorf("WithOwner(%q): Inspect says %q (%v)", owner, in.Owner, err)
		}
		for i, n := range in.Nodes {
			if n.Token == l.Token() && n.Owner != owner {
				t.Errorf("WithOwner(%q): node %d says %q", owner, i, n.Owner)
			}
		}
		l.Unlock(ctx)
		c.Close()
	}
}

// A ttl that is not positive is refused as such, not by the drift allowance it would leave.
func TestTTLMustBePositive(t *testing.T) {
	c, err := redlock.New(redistest.MiniClients(t, redistest.Minis(t, 1)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	for _, ttl := range []time.Duration{-time.Second, 0, -time.Millisecond} {
		want := fmt.Sprintf("redlock: ttl %v must be positive", ttl)
		if _, err := c.Election("e", ttl); err == nil || err.Error() != want {
			t.Errorf("Election(e, %v): %v; want %q", ttl, err, want)
		}
		if _, err := c.TryLock(ctx, "k", ttl); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("TryLock(k, %v): %v; want %q", ttl, err, want)
		}
	}
}

// Names, keys and values larger than the nodes can serve within the node timeout are refused
// before anything is sent, with an error that says the limit; the largest allowed work on
// real servers (with a node timeout that a busy test machine leaves room for: on an idle one
// they take a millisecond or two, docs/election.md).
func TestSizesRefusedUpFront(t *testing.T) {
	const maxKey, maxValue = 1024, 64 << 10
	ss := redistest.StartN(t, 3)
	c, err := redlock.New(redistest.Clients(t, redistest.Addrs(ss)...), redlock.WithNodeTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	long := strings.Repeat("k", maxKey+1)
	big := strings.Repeat("v", maxValue+1)
	keyLimit := fmt.Sprintf("the limit is %d bytes", maxKey)
	valueLimit := fmt.Sprintf("the limit is %d bytes", maxValue)
	if _, err := c.Election(long, time.Minute); err == nil || !strings.Contains(err.Error(), keyLimit) {
		t.Errorf("Election of a name of %d bytes: %v", len(long), err)
	}
	if _, err := c.TryLock(ctx, long, time.Minute); err == nil || !strings.Contains(err.Error(), keyLimit) {
		t.Errorf("TryLock of a key of %d bytes: %v", len(long), err)
	}
	if _, err := c.Inspect(ctx, long); err == nil || !strings.Contains(err.Error(), keyLimit) {
		t.Errorf("Inspect of a key of %d bytes: %v", len(long), err)
	}
	if _, err := redlock.New(redistest.Clients(t, ss[0].Addr), redlock.WithKeyPrefix(long)); err == nil || !strings.Contains(err.Error(), keyLimit) {
		t.Errorf("WithKeyPrefix of %d bytes: %v", len(long), err)
	}
	e, err := c.Election(strings.Repeat("e", maxKey), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Campaign(ctx, big); err == nil || !strings.Contains(err.Error(), valueLimit) {
		t.Errorf("Campaign with a value of %d bytes: %v", len(big), err)
	}
	if _, err := e.TryCampaign(ctx, big); err == nil || !strings.Contains(err.Error(), valueLimit) {
		t.Errorf("TryCampaign with a value of %d bytes: %v", len(big), err)
	}
	if err := e.Lead(ctx, big, func(context.Context, *redlock.Term) error { return nil }); err == nil || !strings.Contains(err.Error(), valueLimit) {
		t.Errorf("Lead with a value of %d bytes: %v", len(big), err)
	}
	if in, err := c.Inspect(ctx, strings.Repeat("e", maxKey)); err != nil || in.Held {
		t.Fatalf("something was sent: %+v, %v", in, err)
	}

	largest := strings.Repeat("v", maxValue)
	term, err := e.Campaign(ctx, largest)
	if err != nil {
		t.Fatal(err)
	}
	if err := term.Proclaim(ctx, big); err == nil || !strings.Contains(err.Error(), valueLimit) {
		t.Errorf("Proclaim of a value of %d bytes: %v", len(big), err)
	}
	if l, err := e.Leader(ctx); err != nil || l.Value != largest {
		t.Errorf("Leader with a value of %d bytes: %d bytes, %v", len(largest), len(l.Value), err)
	}
	if err := term.Proclaim(ctx, strings.Repeat("w", maxValue)); err != nil {
		t.Errorf("Proclaim of a value of %d bytes: %v", len(largest), err)
	}
	if err := term.Resign(ctx); err != nil {
		t.Errorf("Resign: %v", err)
	}
	lock, err := c.Lock(ctx, strings.Repeat("k", maxKey), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if in, err := c.Inspect(ctx, lock.Key()); err != nil || !in.Held {
		t.Errorf("Inspect of a key of %d bytes: %+v, %v", len(lock.Key()), in.Held, err)
	}
	if err := lock.Unlock(ctx); err != nil {
		t.Errorf("Unlock: %v", err)
	}
}
