package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/quorum"
	"github.com/quorumlock/redlock/redlock"
)

// Exit statuses of redlock exec and elect besides the command's own (sysexits.h where one fits).
const (
	exitUsage    = 2   // bad flags, URLs or command line
	exitSoftware = 70  // EX_SOFTWARE: redlock itself failed (an error the library does not document)
	exitTempFail = 75  // EX_TEMPFAIL: the lock was not acquired within --wait, or the cluster did not answer
	exitNoPerm   = 77  // EX_NOPERM: so many nodes refused the credentials or failed TLS that no quorum is possible
	exitNoExec   = 126 // the command was found but could not be run, as in sh
	exitNotFound = 127 // the command was not found, as in sh
)

// driftFactor is the clock drift (a fraction of the ttl) that exec's locks and elect's terms
// allow for: the library's default, given to it explicitly so that --ttl is checked against the
// same allowance before any node is asked.
const driftFactor = 0.01

// forwarded are the signals redlock exec and elect pass on to the command.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// A runner is what redlock exec and redlock elect share: the nodes, how to run COMMAND under
// a lock or a term (--ttl, --wait, --grace), the signals caught, and the messages.
type runner struct {
	nodeFlags
	name    string // "redlock exec", "redlock elect": every message starts with it
	nodes   []node
	ttl     time.Duration
	wait    time.Duration
	grace   time.Duration
	verbose bool
	argv    []string // the command and its arguments

	stdout, stderr io.Writer
	sigs           chan os.Signal // the signals caught, to pass on to the command
	reported       []bool         // by node: its failure was reported already
	mu             sync.Mutex     // one message at a time on stderr (see finish)
}

// errorf tells the user on stderr.
func (r *runner) errorf(format string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.stderr, r.name+": "+format+"\n", a...)
}

// logf tells the user on stderr with --verbose.
func (r *runner) logf(format string, a ...any) {
	if r.verbose {
		r.errorf(format, a...)
	}
}

// catchSignals catches the signals to pass on from now on: while waiting for the lock or the
// term they end the wait, later they go to the command. The returned function stops it.
func (r *runner) catchSignals() (stop func()) {
	r.sigs = make(chan os.Signal, 8)
	signal.Notify(r.sigs, forwarded...)
	return func() { signal.Stop(r.sigs) }
}

// connected runs f with a Client over the nodes (see connect, made with opts), catching the
// signals to pass on meanwhile; then it gives back what f took, with the giveBack f returns
// (nil for nothing), and closes the Client (see finish). It returns f's exit status, or
// connect's when there is no Client.
func (r *runner) connected(ctx context.Context, opts []redlock.Option, f func(*redlock.Client) (code int, giveBack func(context.Context))) int {
	defer r.catchSignals()()
	cs := clients(r.nodes)
	locker, code := r.connect(ctx, cs, opts...)
	var giveBack func(context.Context)
	if locker != nil {
		code, giveBack = f(locker)
	}
	r.finish(ctx, giveBack, locker, cs)
	return code
}

// gaveBack reports with --verbose how giving the lock or the term back ended: done, or what op
// ("release", "resign") met on the nodes, err's lines (see describe).
func (r *runner) gaveBack(op string, err error, done string) {
	if err != nil {
		r.logf("%s: %s", op, strings.Join(describe(err, r.nodes), "; "))
	} else {
		r.logf("%s", done)
	}
}

// exitBudget bounds what a runner does once its command has ended (give the lock or the term
// back, close the Client and the connections) so that it exits within 2 s of the command
// whatever the nodes do: a node that has not answered the release by then may keep the key
// until its ttl ends.
const exitBudget = time.Second

// finish runs giveBack (when not nil: the release of the lock or the term) and closes locker
// (when not nil) and cs, giving up after exitBudget. What it gave up on is left to the
// process's exit, which follows at once: the library bounds a release by the node timeout,
// which --node-timeout may make long, and Close by the calls it waits for.
func (r *runner) finish(ctx context.Context, giveBack func(ctx context.Context), locker *redlock.Client, cs []redis.UniversalClient) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if giveBack != nil {
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), exitBudget)
			giveBack(uctx)
			cancel()
		}
		if locker != nil {
			locker.Close()
		}
		closeClients(cs)
	}()
	t := time.NewTimer(exitBudget)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		r.logf("release and clean-up not done after %v; exiting without them (a node that has not answered may keep the key until its ttl ends)", exitBudget)
	}
}

// connect checks the nodes and returns the Client over them, made with opts besides the node
// timeout, the prefix and the drift factor, or nil and the exit status.
func (r *runner) connect(ctx context.Context, cs []redis.UniversalClient, opts ...redlock.Option) (*redlock.Client, int) {
	if !r.preflight(ctx, cs) {
		return nil, exitNoPerm
	}
	if r.cluster != "" {
		nodes, _, err := r.expand(ctx, r.nodes, cs)
		if err != nil { // the cluster did not answer
			r.errorf("%v", err)
			return nil, exitTempFail
		}
		r.nodes, r.reported = nodes, nil // the votes, numbered anew
	}
	opts = append([]redlock.Option{redlock.WithNodeTimeout(r.nodeTimeout), redlock.WithKeyPrefix(r.prefix), redlock.WithDriftFactor(driftFactor)}, opts...)
	locker, err := r.locker(ctx, cs, opts...)
	switch {
	case err != nil && r.cluster != "": // read again, the cluster did not answer
		r.errorf("%v", err)
		return nil, exitTempFail
	case err != nil: // the flags were checked: nothing New refuses is left
		r.errorf("%v", err)
		return nil, exitSoftware
	}
	return locker, 0
}

// preflight pings every node once so that credentials a node refuses show at once, naming the
// node, rather than as a wait for a lock that can never be had. It reports every node that
// failed, and marks it so that it is not reported again if the lock is not acquired; it
// returns false only when the refusals leave no quorum.
func (r *runner) preflight(ctx context.Context, cs []redis.UniversalClient) bool {
	refused := 0
	r.reported = make([]bool, len(cs))
	for i, err := range ping(ctx, cs, r.nodes, r.nodeTimeout) {
		if err == nil {
			continue
		}
		if authFailure(err) {
			refused++
		}
		r.errorf("node %d (%s): %v", i, r.nodes[i].name, err)
		r.reported[i] = true
	}
	if len(cs)-refused < quorum.Of(len(cs)) {
		r.errorf("%d of %s refused the credentials or failed TLS; no quorum is possible", refused, count(len(cs), "node"))
		return false
	}
	return true
}

// take gets the lock or the term for r: with once (one attempt) when --wait is 0, else with
// until (attempts until its context ends), bounded by --wait when positive (waitUnbounded: no
// bound). It returns what it got, or the zero T and the exit status: notGot's, which says why
// it was not got, or when a signal ended the wait, the signal's (see signalStatus), having
// said that it came while doing what ("campaigning") and given back with giveBack what was
// got just as it came.
func take[T any](ctx context.Context, r *runner, while string, once, until func(context.Context) (T, error),
	giveBack func(context.Context, T), notGot func(error) int) (T, int) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		var got result
		switch {
		case r.wait == 0:
			got.v, got.err = once(ctx)
		case r.wait == waitUnbounded:
			got.v, got.err = until(ctx)
		default:
			wctx, cancel := context.WithTimeout(ctx, r.wait)
			got.v, got.err = until(wctx)
			cancel()
		}
		done <- got
	}()
	var zero T
	select {
	case got := <-done:
		if got.err != nil {
			return zero, notGot(got.err)
		}
		return got.v, 0
	case s := <-r.sigs:
		cancel()
		if got := <-done; got.err == nil { // got just as the signal came: give it back
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			giveBack(uctx, got.v)
			cancel()
		}
		r.errorf("%v while %s", s, while)
		return zero, signalStatus(s)
	}
}

// waitUnbounded is a runner's wait when it waits for as long as it takes: elect's without --wait.
const waitUnbounded time.Duration = -1

// signalStatus is the exit status for signal s that ended a wait: 128+n, as a shell gives.
func signalStatus(s os.Signal) int { return 128 + int(s.(syscall.Signal)) }

// whyNot prints, indented, why the lock or the term was not had: err's lines (see describe),
// less what was said already: the sentinel, the end of the wait (also for the nodes whose
// answer it cut off), and the nodes that preflight reported. It returns the exit status:
// exitTempFail when err is ErrNotAcquired, else exitSoftware.
func (r *runner) whyNot(err error) int {
	waitOver := errors.Is(err, context.DeadlineExceeded)
	for _, line := range describe(err, r.nodes) {
		i, ok := lineNode(line)
		if line == redlock.ErrNotAcquired.Error() || line == context.DeadlineExceeded.Error() ||
			waitOver && strings.HasSuffix(line, ": "+context.DeadlineExceeded.Error()) ||
			ok && i < len(r.reported) && r.reported[i] {
			continue
		}
		fmt.Fprintf(r.stderr, "  %s\n", line)
	}
	if errors.Is(err, redlock.ErrNotAcquired) {
		return exitTempFail
	}
	return exitSoftware
}
