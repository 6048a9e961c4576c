package wire_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/internal/wire"
)

// encoder is any script's arguments.
type encoder interface{ Encode() (keys, args []string) }

// run sends the script with e's arguments, as the library would.
func run(t *testing.T, c *redis.Client, s *wire.Script, e encoder) any {
	t.Helper()
	keys, args := e.Encode()
	anys := make([]any, len(args))
	for i, a := range args {
		anys[i] = a
	}
	v, err := c.Eval(context.Background(), s.Source(), keys, anys...).Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		t.Fatalf("%s%q%q: %v", s.Name(), keys, args, err)
	}
	return v
}

func granted(t *testing.T, reply any) bool {
	t.Helper()
	ok, _, err := wire.DecodeGrant(reply)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func held(t *testing.T, reply any) bool {
	t.Helper()
	ok, err := wire.DecodeHeld(reply)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// listen subscribes to ch and returns a function that returns the next message that wakes a
// waiter within a second ("" for none).
func listen(t *testing.T, c *redis.Client, ch ...string) func() string {
	t.Helper()
	ps := c.Subscribe(context.Background(), ch...)
	t.Cleanup(func() { ps.Close() })
	if _, err := ps.Receive(context.Background()); err != nil {
		t.Fatal(err)
	}
	msgs := ps.Channel()
	return func() string {
		for {
			select {
			case m := <-msgs:
				if !strings.Contains(m.Payload, "\n") {
					continue // only asks whether a Client hears: it wakes nobody
				}
				return m.Channel + " " + m.Payload
			case <-time.After(time.Second):
				return ""
			}
		}
	}
}

func TestScriptsOnARealServer(t *testing.T) {
	s := redistest.Start(t)
	c := redistest.Client(t, s.Addr)
	ctx := context.Background()
	names, err := wire.NewNames("app:")
	if err != nil {
		t.Fatal(err)
	}
	k := names.Mutex("orders")
	ch := names.Channel()
	w1 := wire.Waiter{Client: "c1", N: 7}.String()
	w2 := wire.Waiter{Client: "c2", N: 1}.String()
	next := listen(t, c, ch, names.ClientChannel("c1"), names.ClientChannel("c2"))
	acq := func(token, waiter string, place int64) wire.Acquire {
		keys := k
		keys.Fence = ""
		return wire.Acquire{Keys: keys, Token: token, TTL: time.Minute, Waiter: waiter, Place: place, Lease: time.Minute, Channel: ch}
	}

	t.Run("acquire and release", func(t *testing.T) {
		if !granted(t, run(t, c, wire.AcquireScript, acq("A", "", 0))) {
			t.Fatal("a free key was refused")
		}
		if v := c.Get(ctx, k.Lock).Val(); v != "A" {
			t.Fatalf("the key holds %q", v)
		}
		ok, g, err := wire.DecodeGrant(run(t, c, wire.AcquireScript, acq("B", w1, 10)))
		if err != nil || ok || g.Ahead != 0 || g.Left <= 59*time.Second || g.Left > time.Minute {
			t.Fatalf("a waiter refused a held key: granted %v, %d ahead, %v left, %v", ok, g.Ahead, g.Left, err)
		}
		if got := c.ZRange(ctx, k.Queue, 0, -1).Val(); !slices.Equal(got, []string{w1}) {
			t.Fatalf("the line is %q", got)
		}
		if d := c.PTTL(ctx, k.Queue).Val(); d <= 59*time.Second || d > 2*time.Minute { // the line lasts the lease, no more than twice
			t.Fatalf("the line expires in %v, want the lease (1m) or twice as long", d)
		}
		if c.Exists(ctx, k.Leases+":"+w1).Val() != 0 {
			t.Fatal("a waiter whose Client hears every node took a lease")
		}
		if held(t, run(t, c, wire.ReleaseScript, wire.Release{Keys: k, Token: "B", Channel: ch, Lease: time.Minute})) {
			t.Fatal("another's token released the key")
		}
		if !held(t, run(t, c, wire.ReleaseScript, wire.Release{Keys: k, Token: "A", Channel: ch, Lease: time.Minute})) {
			t.Fatal("the holder did not release")
		}
		msg := next()
		want := names.ClientChannel("c1") + " " + (wire.Announcement{Key: k.Lock, Waiter: w1}).String()
		if msg != want {
			t.Fatalf("announced %q, want %q", msg, want)
		}
		a, ok := wire.ParseAnnouncement(msg[len(names.ClientChannel("c1"))+1:])
		w, okw := wire.ParseWaiter(a.Waiter)
		if !ok || !okw || a.Key != k.Lock || w != (wire.Waiter{Client: "c1", N: 7}) {
			t.Fatalf("parsed %+v, %+v", a, w)
		}
	})

	t.Run("a release hands the key to the first in line", func(t *testing.T) {
		// The holder's release above handed the key to w1, for w1's lease, and took w1 out of
		// line: nobody else takes the key, neither the waiter now first in line nor an attempt
		// that does not wait.
		if v, d := c.Get(ctx, k.Lock).Val(), c.PTTL(ctx, k.Lock).Val(); v != w1 || d <= 59*time.Second || d > time.Minute {
			t.Fatalf("after the release the key holds %q for %v, want w1's name for its lease (1m)", v, d)
		}
		ok, g, err := wire.DecodeGrant(run(t, c, wire.AcquireScript, acq("C", w2, 20)))
		if err != nil || ok || g.Ahead != 0 || g.Left <= 59*time.Second {
			t.Fatalf("a waiter behind the one handed the key: granted %v, %d ahead, %v left, %v", ok, g.Ahead, g.Left, err)
		}
		if granted(t, run(t, c, wire.AcquireScript, acq("X", "", 0))) {
			t.Fatal("an attempt that does not wait took a key handed to a waiter")
		}
		if !granted(t, run(t, c, wire.AcquireScript, acq("B", w1, 10))) {
			t.Fatal("the waiter was refused the key handed to it")
		}
		line := func(want ...string) {
			t.Helper()
			if got := c.ZRange(ctx, k.Queue, 0, -1).Val(); !slices.Equal(got, want) {
				t.Fatalf("the line is %q, want %q", got, want)
			}
		}
		line(w2) // w1 waits no more
		// A roll-back of its attempt puts it back at its place and tells nobody (not itself,
		// nor those behind it).
		rollback := wire.Release{Keys: k, Token: "B", Channel: ch, Waiter: w1, Rollback: true, Place: 10, Lease: time.Minute}
		if !held(t, run(t, c, wire.ReleaseScript, rollback)) {
			t.Fatal("the roll-back did not release")
		}
		if msg := next(); msg != "" {
			t.Fatalf("a roll-back by the first in line announced %q", msg)
		}
		line(w1, w2)
		// The waiter behind finds the key free with w1 ahead of it: it is refused, and the key
		// goes to w1 for the lease, as a release would have given it, without waking w1 (it is
		// only asked whether it hears, by a message that wakes nobody): w1 takes it at its own
		// next attempt.
		ok, g, err = wire.DecodeGrant(run(t, c, wire.AcquireScript, acq("C", w2, 20)))
		if v, d := c.Get(ctx, k.Lock).Val(), c.PTTL(ctx, k.Lock).Val(); err != nil || ok || g.Ahead != 1 || v != w1 || d <= 59*time.Second || d > time.Minute {
			t.Fatalf("after a roll-back, the waiter behind: granted %v, %d ahead, %v, the key holds %q for %v; want refused behind w1, w1's name for its lease",
				ok, g.Ahead, err, v, d)
		}
		if msg := next(); msg != "" {
			t.Fatalf("the free key's attempt by the waiter behind announced %q, want nothing", msg)
		}
		line(w2)
		if !granted(t, run(t, c, wire.AcquireScript, acq("B", w1, 10))) {
			t.Fatal("the waiter was refused the free key handed to it")
		}
		run(t, c, wire.ReleaseScript, rollback)
		line(w1, w2)
		// Another's attempt that took the key while w1 was first (one that does not wait
		// cuts in on a free key) and failed hands it to w1: w1 must not wait for that key's
		// expiry.
		if !granted(t, run(t, c, wire.AcquireScript, acq("X", "", 0))) {
			t.Fatal("an attempt that does not wait was refused a free key")
		}
		run(t, c, wire.ReleaseScript, wire.Release{Keys: k, Token: "X", Channel: ch, Rollback: true, Lease: time.Minute})
		if msg, want := next(), names.ClientChannel("c1")+" "+k.Lock+"\n"+w1; msg != want || c.Get(ctx, k.Lock).Val() != w1 {
			t.Fatalf("a roll-back with w1 first in line announced %q, want %q, and left %q", msg, want, c.Get(ctx, k.Lock).Val())
		}
		// The first in line takes the free key and leaves the line; its release hands the key
		// to the next, which leaves the line with it.
		if !granted(t, run(t, c, wire.AcquireScript, acq("B", w1, 10))) {
			t.Fatal("the first in line was refused")
		}
		line(w2)
		run(t, c, wire.ReleaseScript, wire.Release{Keys: k, Token: "B", Channel: ch, Waiter: w1, Lease: time.Minute})
		line()
		if msg, want := next(), names.ClientChannel("c2")+" "+k.Lock+"\n"+w2; msg != want || c.Get(ctx, k.Lock).Val() != w2 {
			t.Fatalf("announced %q, want %q; the key holds %q", msg, want, c.Get(ctx, k.Lock).Val())
		}
		// w2 gives up: what it was handed goes to the next, and with nobody left and nobody
		// waiting without a place, to whoever asks first, told to nobody.
		run(t, c, wire.LeaveScript, wire.Leave{Keys: k, Waiter: w2, Channel: ch, Lease: time.Minute})
		if msg := next(); msg != "" || c.Exists(ctx, k.Lock).Val() != 0 {
			t.Fatalf("the waiter handed the key left; announced %q, want nothing, and the key stays", msg)
		}
	})

	t.Run("a hand-over that came too late is passed on", func(t *testing.T) {
		// w1 waits behind H here; it won its quorum on other nodes (token "W"), and then H's
		// release here handed it the key. w1's Unlock passes the key on to w2 rather than leave
		// it to w1's name until w1's lease lapses.
		run(t, c, wire.AcquireScript, acq("H", "", 0))
		run(t, c, wire.AcquireScript, acq("x", w1, 1))
		run(t, c, wire.AcquireScript, acq("y", w2, 2))
		run(t, c, wire.ReleaseScript, wire.Release{Keys: k, Token: "H", Channel: ch, Lease: time.Minute})
		if msg, want := next(), names.ClientChannel("c1")+" "+k.Lock+"\n"+w1; msg != want {
			t.Fatalf("announced %q, want %q", msg, want)
		}
		if held(t, run(t, c, wire.ReleaseScript, wire.Release{Keys: k, Token: "W", Channel: ch, Waiter: w1, Lease: time.Minute})) {
			t.Fatal("a release counted a hand-over as its token")
		}
		if v := c.Get(ctx, k.Lock).Val(); v != w2 || next() != names.ClientChannel("c2")+" "+k.Lock+"\n"+w2 {
			t.Fatalf("after w1's Unlock the key holds %q, want w2's name", v)
		}
		c.Set(ctx, k.Watch, "1", time.Minute) // a call without a place in line waits (a LockAll)
		run(t, c, wire.LeaveScript, wire.Leave{Keys: k, Waiter: w2, Channel: ch, Lease: time.Minute})
		if msg := next(); msg != ch+" "+k.Lock+"\n" || c.Exists(ctx, k.Lock, k.Queue).Val() != 0 {
			t.Fatalf("announced %q; the key or its line stays", msg)
		}
		c.Del(ctx, k.Watch)
	})

	t.Run("a hand-over waits one lease at most", func(t *testing.T) {
		// w1 joined with a lease for an hour; the release hands it the key for the releasing
		// Client's lease (a minute), and takes it out of line.
		run(t, c, wire.AcquireScript, acq("H", "", 0))
		far := acq("x", w1, 1)
		far.Lease, far.Leased = time.Hour, true
		run(t, c, wire.AcquireScript, far)
		run(t, c, wire.ReleaseScript, wire.Release{Keys: k, Token: "H", Channel: ch, Lease: time.Minute})
		next()
		if d := c.PTTL(ctx, k.Lock).Val(); d <= 59*time.Second || d > time.Minute {
			t.Fatalf("%s lasts %v after the hand-over, want the releaser's lease (1m)", k.Lock, d)
		}
		if c.Exists(ctx, k.Queue).Val() != 0 {
			t.Fatalf("the waiter handed the key is still in line: %q", c.ZRange(ctx, k.Queue, 0, -1).Val())
		}
		run(t, c, wire.LeaveScript, wire.Leave{Keys: k, Waiter: w1, Channel: ch, Lease: time.Minute})
		if c.Exists(ctx, k.Lock, k.Queue).Val() != 0 {
			t.Fatal("the key or its line stays after the waiter left")
		}
		c.Del(ctx, k.Leases+":"+w1)
	})

	t.Run("a waiter whose Client does not hear is dropped", func(t *testing.T) {
		// w3's Client hears nothing of this node (its process ended, or its connection here
		// did); w4's is a cluster's, which hears on another node, and holds a lease.
		w3 := wire.Waiter{Client: "c3", N: 1}.String()
		w4 := wire.Waiter{Client: "c4", N: 1}.String()
		run(t, c, wire.AcquireScript, acq("D", "", 0))
		run(t, c, wire.AcquireScript, acq("B", w3, 5))
		leased := acq("B", w4, 6)
		leased.Leased = true
		run(t, c, wire.AcquireScript, leased)
		run(t, c, wire.AcquireScript, acq("C", w2, 20))
		if d := c.PTTL(ctx, k.Leases+":"+w4).Val(); d <= 59*time.Second || d > time.Minute {
			t.Fatalf("a cluster's waiter's lease lasts %v, want its lease (1m)", d)
		}
		// While the key is held, the silent waiters still count as ahead of the one behind
		// them (they are dropped when the key is handed on, or found free).
		ok, g, err := wire.DecodeGrant(run(t, c, wire.AcquireScript, acq("C", w2, 20)))
		if err != nil || ok || g.Ahead != 1 {
			t.Fatalf("a waiter behind silent ones: granted %v, %d ahead, %v", ok, g.Ahead, err)
		}
		// The release drops w3, and hands the key to w4 while its lease lives.
		run(t, c, wire.ReleaseScript, wire.Release{Keys: k, Token: "D", Channel: ch, Lease: time.Minute, Leased: true})
		if v := c.Get(ctx, k.Lock).Val(); v != w4 {
			t.Fatalf("the release handed the key to %q, want the waiter whose lease lives", v)
		}
		if got := c.ZRange(ctx, k.Queue, 0, -1).Val(); !slices.Equal(got, []string{w2}) {
			t.Fatalf("the line is %q, want w2 alone", got)
		}
		// Both join again ahead of w2 while another holds the key; its holder crashes (the key
		// lapses), and so does w4's lease: w2's attempt finds the key free, drops both, and
		// takes it.
		c.Set(ctx, k.Lock, "D2", time.Minute)
		run(t, c, wire.AcquireScript, acq("B", w3, 5))
		run(t, c, wire.AcquireScript, leased)
		c.Del(ctx, k.Lock, k.Leases+":"+w4)
		if msg := next(); msg != "" {
			t.Fatalf("joining announced %q", msg)
		}
		leased = acq("C", w2, 20)
		leased.Leased = true
		if !granted(t, run(t, c, wire.AcquireScript, leased)) {
			t.Fatal("the live waiter, behind silent ones only, was refused the free key")
		}
		if msg := next(); msg != "" || c.Exists(ctx, k.Queue).Val() != 0 {
			t.Fatalf("taking the key announced %q, want nothing, and left the line %q", msg, c.ZRange(ctx, k.Queue, 0, -1).Val())
		}
		// With nobody in line, a release tells every Client only while a call without a place
		// in line (a LockAll) waits for the key: an uncontended release sends no message.
		run(t, c, wire.ReleaseScript, wire.Release{Keys: k, Token: "C", Channel: ch, Waiter: w2, Lease: time.Minute})
		if msg := next(); msg != "" || c.Exists(ctx, k.Lock).Val() != 0 {
			t.Fatalf("with nobody waiting announced %q, want nothing, and the key stays", msg)
		}
		c.Set(ctx, k.Watch, "1", time.Minute)
		run(t, c, wire.AcquireScript, acq("Z", "", 0))
		run(t, c, wire.ReleaseScript, wire.Release{Keys: k, Token: "Z", Channel: ch, Lease: time.Minute})
		if msg, want := next(), ch+" "+k.Lock+"\n"; msg != want {
			t.Fatalf("with a call waiting announced %q, want %q", msg, want)
		}
		c.Del(ctx, k.Watch)
		// A roll-back with nobody in line wakes nobody: no waiter's turn came.
		run(t, c, wire.AcquireScript, acq("Y", "", 0))
		run(t, c, wire.ReleaseScript, wire.Release{Keys: k, Token: "Y", Channel: ch, Rollback: true, Lease: time.Minute})
		if msg := next(); msg != "" {
			t.Fatalf("a roll-back with nobody in line announced %q", msg)
		}
	})

	t.Run("a waiter that began earlier is first in line, whenever it joins", func(t *testing.T) {
		// Places are the times the waiters began. w2 began before w1 but reaches the node after
		// it (its Client's first subscription was slow, or its clock lags): it is first in line,
		// and told so, with the key's time left, at its first attempt.
		run(t, c, wire.AcquireScript, acq("F", "", 0))
		attempt := func(what, token, waiter string, place, ahead int64) wire.Grant {
			t.Helper()
			ok, g, err := wire.DecodeGrant(run(t, c, wire.AcquireScript, acq(token, waiter, place)))
			if err != nil || ok || g.Ahead != ahead {
				t.Fatalf("%s: granted %v, %d ahead, %v; want refused, %d ahead", what, ok, g.Ahead, err, ahead)
			}
			return g
		}
		attempt("w1 joins a line nobody is in", "B", w1, 10, 0)
		if g := attempt("w2 joins after w1 with an earlier place", "C", w2, 5, 0); g.Left <= 59*time.Second {
			t.Fatalf("w2, first in line, was told the key has %v left, want its ttl (1m)", g.Left)
		}
		attempt("w1 tries again", "B", w1, 10, 1)
		// A release that finds only waiters whose Clients hear nothing lets the key go, and
		// tells every Client while a call without a place in line waits.
		c.ZRem(ctx, k.Queue, w1, w2)
		attempt("a waiter whose Client hears nothing joins", "G", wire.Waiter{Client: "c3", N: 2}.String(), 30, 0)
		attempt("and another", "G", wire.Waiter{Client: "c4", N: 2}.String(), 40, 1)
		c.Set(ctx, k.Watch, "1", time.Minute)
		if !held(t, run(t, c, wire.ReleaseScript, wire.Release{Keys: k, Token: "F", Channel: ch, Lease: time.Minute})) {
			t.Fatal("the holder did not release")
		}
		if msg, want := next(), ch+" "+k.Lock+"\n"; msg != want {
			t.Fatalf("announced %q, want %q", msg, want)
		}
		if n := c.Exists(ctx, k.Lock, k.Queue).Val(); n != 0 {
			t.Fatalf("%d of the key and its line stay", n)
		}
		c.Del(ctx, k.Watch)
	})

	t.Run("a free key goes to the waiter that began first", func(t *testing.T) {
		// w1 waits behind a holder that crashed (its key lapsed). w2 began before w1 but
		// reaches the node only now: it takes the free key, and w1 is told nothing.
		run(t, c, wire.AcquireScript, acq("H", "", 0))
		run(t, c, wire.AcquireScript, acq("x", w1, 10))
		c.Del(ctx, k.Lock)
		if !granted(t, run(t, c, wire.AcquireScript, acq("E", w2, 5))) {
			t.Fatal("the waiter that began first was refused the free key")
		}
		if msg := next(); msg != "" {
			t.Fatalf("taking the free key announced %q", msg)
		}
		if got := c.ZRange(ctx, k.Queue, 0, -1).Val(); !slices.Equal(got, []string{w1}) {
			t.Fatalf("the line is %q, want w1 alone", got)
		}
		run(t, c, wire.ReleaseScript, wire.Release{Keys: k, Token: "E", Channel: ch, Waiter: w2, Lease: time.Minute})
		if msg, want := next(), names.ClientChannel("c1")+" "+k.Lock+"\n"+w1; msg != want {
			t.Fatalf("announced %q, want %q", msg, want)
		}
		run(t, c, wire.LeaveScript, wire.Leave{Keys: k, Waiter: w1, Channel: ch, Lease: time.Minute})
		if n := c.Exists(ctx, k.Lock, k.Queue).Val(); n != 0 {
			t.Fatalf("%d of the key and its line stay", n)
		}
	})

	t.Run("leave", func(t *testing.T) {
		run(t, c, wire.AcquireScript, acq("E", "", 0))
		run(t, c, wire.AcquireScript, acq("x", w1, 1))
		run(t, c, wire.AcquireScript, acq("y", w2, 2))
		c.Del(ctx, k.Lock)
		run(t, c, wire.LeaveScript, wire.Leave{Keys: k, Waiter: w1, Channel: ch, Lease: time.Minute})
		if msg, want := next(), names.ClientChannel("c2")+" "+k.Lock+"\n"+w2; msg != want || c.Get(ctx, k.Lock).Val() != w2 {
			t.Fatalf("the first waiter left; announced %q, want %q, and the key holds %q", msg, want, c.Get(ctx, k.Lock).Val())
		}
		run(t, c, wire.LeaveScript, wire.Leave{Keys: k, Waiter: w2, Channel: ch, Lease: time.Minute})
		next()
		if n := c.Exists(ctx, k.Queue).Val(); n != 0 {
			t.Fatalf("%d sets of the line left", n)
		}
		if keys := c.Keys(ctx, k.Leases+"*").Val(); len(keys) != 0 {
			t.Fatalf("lease keys %q stay, want none: these waiters' Clients hear every node", keys)
		}
	})

	t.Run("extend and fence", func(t *testing.T) {
		withFence := wire.Acquire{Keys: k, Token: "F", TTL: time.Second}
		c.Set(ctx, k.Fence, "41", 0)
		ok, g, err := wire.DecodeGrant(run(t, c, wire.AcquireScript, withFence))
		if err != nil || !ok || g.Counter != 41 || g.Micros < uint64(time.Now().Add(-time.Hour).UnixMicro()) {
			t.Fatalf("fenced grant %v %+v %v", ok, g, err)
		}
		if !held(t, run(t, c, wire.ExtendScript, wire.Extend{Key: k.Lock, Token: "F", TTL: time.Hour})) ||
			c.PTTL(ctx, k.Lock).Val() < time.Minute {
			t.Fatal("not extended")
		}
		if held(t, run(t, c, wire.ExtendScript, wire.Extend{Key: k.Lock, Token: "G", TTL: time.Hour})) {
			t.Fatal("another's token extended")
		}
		for _, f := range []struct {
			fence uint64
			want  string
		}{{1000, "1000"}, {999, "1000"}, {10000, "10000"}} {
			if !held(t, run(t, c, wire.FenceScript, wire.Fence{Keys: k, Token: "F", Fence: f.fence})) {
				t.Fatal("fence round refused its holder")
			}
			if got := c.Get(ctx, k.Fence).Val(); got != f.want {
				t.Fatalf("counter %s after %d, want %s", got, f.fence, f.want)
			}
		}
		if held(t, run(t, c, wire.FenceScript, wire.Fence{Keys: k, Token: "G", Fence: 1 << 60})) {
			t.Fatal("fence round for another's token")
		}
		c.Del(ctx, k.Lock)
	})

	t.Run("semaphore", func(t *testing.T) {
		sk := names.Semaphore("pool")
		for i, tok := range []string{"s1", "s2", "s3"} {
			got := granted(t, run(t, c, wire.SemaphoreScript, wire.SemaphoreAcquire{Keys: sk, Token: tok, TTL: time.Minute, Permits: 2}))
			if got != (i < 2) || c.Exists(ctx, sk.Watch).Val() != 0 {
				t.Fatalf("holder %d of 2 permits: granted %v, or a call that does not wait left a mark", i+1, got)
			}
		}
		release := wire.HoldersRelease{Holders: sk.Holders, Watch: sk.Watch, Token: "s2", Channel: ch, Announce: sk.Holders}
		if !held(t, run(t, c, wire.HoldersReleaseScript, release)) || next() != "" {
			t.Fatal("holder not released, or a release with nobody waiting announced it")
		}
		run(t, c, wire.SemaphoreScript, wire.SemaphoreAcquire{Keys: sk, Token: "s2", TTL: time.Minute, Permits: 2})
		waiting := wire.SemaphoreAcquire{Keys: sk, Token: "s3", TTL: time.Minute, Permits: 2, Watch: wire.Watching(w1, time.Minute)}
		if granted(t, run(t, c, wire.SemaphoreScript, waiting)) || c.PTTL(ctx, sk.Watch).Val() <= 59*time.Second {
			t.Fatal("a waiting call took a third permit, or left no mark for the lease")
		}
		if !held(t, run(t, c, wire.HoldersExtendScript, wire.Extend{Key: sk.Holders, Token: "s1", TTL: time.Hour})) {
			t.Fatal("holder not extended")
		}
		if !held(t, run(t, c, wire.HoldersReleaseScript, wire.HoldersRelease{Holders: sk.Holders, Watch: sk.Watch, Token: "s1", Channel: ch, Announce: sk.Holders})) {
			t.Fatal("holder not released")
		}
		if msg, want := next(), ch+" "+sk.Holders+"\n"; msg != want {
			t.Fatalf("announced %q, want %q", msg, want)
		}
	})

	t.Run("rwmutex", func(t *testing.T) {
		rk := names.RWMutex("doc")
		read := func(tok string) bool {
			return granted(t, run(t, c, wire.ReadScript, wire.ReadAcquire{Keys: rk, Token: tok, TTL: time.Minute}))
		}
		write := func(tok, waiter string) bool {
			return granted(t, run(t, c, wire.WriteScript, wire.WriteAcquire{Keys: rk, Token: tok, TTL: time.Minute, Waiter: waiter,
				Watch: wire.Watching(waiter, time.Minute)}))
		}
		if !read("r1") || write("w", "") || c.Exists(ctx, rk.Mark, rk.Watch).Val() != 0 {
			t.Fatal("a reader must keep a writer out, and a writer that does not wait leaves no mark")
		}
		if write("w", w1) || read("r2") || c.Exists(ctx, rk.Watch).Val() != 1 {
			t.Fatal("a waiting writer must mark the lock and keep new readers out")
		}
		run(t, c, wire.WriteAbandonScript, wire.WriteAbandon{Keys: rk, Waiter: w1, Channel: ch})
		if msg, want := next(), ch+" "+rk.Writer+"\n"; msg != want || !read("r2") {
			t.Fatalf("a writer that gave up announced %q, want %q, and lets readers in", msg, want)
		}
		run(t, c, wire.HoldersReleaseScript, wire.HoldersRelease{Holders: rk.Readers, Token: "r1"})
		run(t, c, wire.HoldersReleaseScript, wire.HoldersRelease{Holders: rk.Readers, Token: "r2"})
		if !write("w", w1) {
			t.Fatal("the writer did not get the free lock")
		}
		if c.Exists(ctx, rk.Mark).Val() != 0 {
			t.Fatal("the writer that got the lock kept its mark")
		}
		if !held(t, run(t, c, wire.WriteReleaseScript, wire.WriteRelease{Keys: rk, Token: "w", Channel: ch, Waiter: w1})) {
			t.Fatal("the writer did not release")
		}
		if msg, want := next(), ch+" "+rk.Writer+"\n"; msg != want {
			t.Fatalf("announced %q, want %q", msg, want)
		}
		c.Del(ctx, rk.Watch) // the waiting calls are gone: a release tells nobody
		if !write("w2", "") || !held(t, run(t, c, wire.WriteReleaseScript, wire.WriteRelease{Keys: rk, Token: "w2", Channel: ch})) || next() != "" {
			t.Fatal("an uncontended write release announced itself, or did not release")
		}
	})

	t.Run("claim", func(t *testing.T) {
		a, b := names.Mutex("claim-a"), names.Mutex("claim-b")
		c.Set(ctx, b.Lock, "refused", time.Minute)
		if !granted(t, run(t, c, wire.ClaimScript, wire.MultiAcquire{Keys: []string{a.Lock, b.Lock}, Token: "C", TTL: 5 * time.Second})) {
			t.Fatal("claim not granted")
		}
		for _, k := range []string{a.Lock, b.Lock} {
			if v, ttl := c.Get(ctx, k).Val(), c.PTTL(ctx, k).Val(); v != "C" || ttl <= 0 || ttl > 5*time.Second {
				t.Fatalf("after claim, %s holds %q for %v; want C for at most 5s", k, v, ttl)
			}
		}
	})

	t.Run("multi", func(t *testing.T) {
		a, b := names.Mutex("a"), names.Mutex("b")
		c.Set(ctx, b.Lock, "other", time.Minute)
		all := wire.MultiWait{MultiAcquire: wire.MultiAcquire{Keys: []string{a.Lock, b.Lock}, Token: "M", TTL: time.Minute},
			Watches: []string{a.Watch, b.Watch}, Watch: wire.Watching(w1, time.Minute)}
		if granted(t, run(t, c, wire.MultiAcquireScript, all)) || c.Exists(ctx, a.Lock).Val() != 0 {
			t.Fatal("LockAll set some keys of a set whose other key was taken")
		}
		if c.Exists(ctx, a.Watch, b.Watch).Val() != 2 {
			t.Fatal("a waiting LockAll did not mark its keys")
		}
		c.Del(ctx, b.Lock)
		if !granted(t, run(t, c, wire.MultiAcquireScript, all)) {
			t.Fatal("LockAll of free keys refused")
		}
		if !held(t, run(t, c, wire.MultiExtendScript, all.MultiAcquire)) {
			t.Fatal("LockAll not extended")
		}
		waitB := wire.Acquire{Keys: wire.MutexKeys{Lock: b.Lock, Queue: b.Queue, Leases: b.Leases}, Token: "x", TTL: time.Minute, Waiter: w2, Place: 1, Lease: time.Minute}
		run(t, c, wire.AcquireScript, waitB)
		if !held(t, run(t, c, wire.MultiReleaseScript, wire.MultiRelease{Locks: []wire.MutexKeys{a, b}, Token: "M", Channel: ch, Lease: time.Minute})) {
			t.Fatal("LockAll not released")
		}
		got := []string{next(), next()}
		slices.Sort(got)
		want := []string{ch + " " + a.Lock + "\n", names.ClientChannel("c2") + " " + b.Lock + "\n" + w2}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("announced %q, want %q", got, want)
		}
		// A roll-back hands b to the waiter in line for it, and tells nobody about a.
		if v := c.Get(ctx, b.Lock).Val(); v != w2 {
			t.Fatalf("the release handed b to %q, want the waiter", v)
		}
		c.Del(ctx, b.Lock) // as if the hand-over lapsed
		all.Token = "R"
		run(t, c, wire.MultiAcquireScript, all)
		run(t, c, wire.AcquireScript, waitB) // w2 waits again, at its place
		run(t, c, wire.MultiReleaseScript, wire.MultiRelease{Locks: []wire.MutexKeys{a, b}, Token: "R", Channel: ch, Rollback: true, Lease: time.Minute})
		if got := []string{next(), next()}; !slices.Equal(got, []string{names.ClientChannel("c2") + " " + b.Lock + "\n" + w2, ""}) {
			t.Fatalf("a roll-back announced %q", got)
		}
		run(t, c, wire.LeaveScript, wire.Leave{Keys: b, Waiter: w2, Lease: time.Minute})
		next()
		c.Del(ctx, a.Watch, b.Watch)
	})

	t.Run("election", func(t *testing.T) {
		e := names.Election("leader")
		if e.Lock == names.Key("leader") {
			t.Fatal("an election's key is a lock's")
		}
		acquire := wire.Acquire{Keys: e.MutexKeys, Token: "T1", TTL: time.Minute}
		if !granted(t, run(t, c, wire.AcquireScript, acquire)) {
			t.Fatal("a free election refused")
		}
		elect := wire.Elect{Keys: e, Token: "T1", Term: 1000, Version: 1, Value: "node-a", Channel: ch}
		if !held(t, run(t, c, wire.ElectScript, elect)) {
			t.Fatal("the second round refused its holder")
		}
		if msg, want := next(), ch+" "+e.Value+"\n"; msg != want {
			t.Fatalf("announced %q, want %q", msg, want)
		}
		v, ok := wire.DecodeValue(c.Get(ctx, e.Value).Val())
		if !ok || v != (wire.Value{Term: 1000, Version: 1, Value: "node-a"}) || c.Get(ctx, e.Fence).Val() != "1000" {
			t.Fatalf("value %+v %v, counter %q", v, ok, c.Get(ctx, e.Fence).Val())
		}
		if !held(t, run(t, c, wire.ElectExtendScript, wire.ElectExtend{Keys: e, Token: "T1", TTL: time.Hour})) ||
			c.PTTL(ctx, e.Value).Val() < time.Minute {
			t.Fatal("the term and its value were not extended")
		}
		elect.Version, elect.Value, elect.Token = 2, "", "T2"
		if held(t, run(t, c, wire.ElectScript, elect)) {
			t.Fatal("another's token proclaimed")
		}
		r, err := wire.DecodeReading(run(t, c, wire.InspectScript, wire.Inspect{Mutex: e.MutexKeys, Value: e.Value}))
		if err != nil || r.Lock.Token != "T1" || r.Lock.TTL < time.Minute || r.Fence != 1000 || r.Value == "" {
			t.Fatalf("inspected %+v, %v", r, err)
		}
		if !held(t, run(t, c, wire.ResignScript, wire.Resign{Keys: e, Token: "T1", Channel: ch, Lease: time.Minute})) {
			t.Fatal("the leader did not resign")
		}
		if got, want := []string{next(), next()}, []string{ch + " " + e.Value + "\n", ""}; !slices.Equal(got, want) {
			t.Fatalf("announced %q, want %q: the term's end, and no free key that nobody waits for", got, want)
		}
		if n := c.Exists(ctx, e.Lock, e.Value).Val(); n != 0 {
			t.Fatalf("%d keys of the term left", n)
		}
		// A failed campaign's roll-back tells the candidate in line, and nobody that a term
		// ended.
		acquire.Token = "T3"
		run(t, c, wire.AcquireScript, acquire)
		run(t, c, wire.AcquireScript, wire.Acquire{Keys: e.MutexKeys, Token: "T4", TTL: time.Minute, Waiter: w1, Place: 1, Lease: time.Minute})
		run(t, c, wire.ResignScript, wire.Resign{Keys: e, Token: "T3", Channel: ch, Rollback: true, Lease: time.Minute})
		if got := []string{next(), next()}; !slices.Equal(got, []string{names.ClientChannel("c1") + " " + e.Lock + "\n" + w1, ""}) {
			t.Fatalf("a roll-back announced %q", got)
		}
	})

	t.Run("inspect", func(t *testing.T) {
		k := names.Mutex("doc")
		rk, sk := names.RWMutex("doc"), names.Semaphore("doc")
		run(t, c, wire.ReadScript, wire.ReadAcquire{Keys: rk, Token: "r1", TTL: time.Minute})
		run(t, c, wire.SemaphoreScript, wire.SemaphoreAcquire{Keys: sk, Token: "s1", TTL: time.Minute, Permits: 2})
		run(t, c, wire.SemaphoreScript, wire.SemaphoreAcquire{Keys: sk, Token: "s2", TTL: time.Second, Permits: 2})
		r, err := wire.DecodeReading(run(t, c, wire.InspectScript, wire.Inspect{Mutex: k, RWMutex: rk, Semaphore: sk}))
		if err != nil || r.Lock.Token != "" || len(r.Readers) != 1 || r.Readers[0].Token != "r1" || len(r.Holders) != 2 ||
			r.Holders[1].Token != "s1" || r.Holders[1].TTL < 50*time.Second || r.Value != "" {
			t.Fatalf("inspected %+v, %v", r, err)
		}
	})
}

func TestTokens(t *testing.T) {
	random := strings.Repeat("a", wire.RandomLen)
	for _, tc := range []struct {
		multi, owner string
	}{{"", ""}, {"", "web-1"}, {wire.MultiMark, ""}, {wire.MultiMark, "a~b.c"}} {
		tok := wire.Token(random, tc.multi, tc.owner)
		if wire.IsMulti(tok) != (tc.multi != "") || wire.Owner(tok) != tc.owner {
			t.Errorf("%q: multi %v, owner %q", tok, wire.IsMulti(tok), wire.Owner(tok))
		}
	}
	for _, foreign := range []string{"", "x", "c3VyZS4gdGhhdCdzIGEgdG9rZW4=", strings.Repeat("f", 40)} {
		if wire.IsMulti(foreign) || wire.Owner(foreign) != "" {
			t.Errorf("foreign token %q read as ours", foreign)
		}
	}
}
