package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/clock"
	"github.com/quorumlock/redlock/quorum"
	"github.com/quorumlock/redlock/redlock"
)

// Exit statuses of redlock exec besides the command's own (sysexits.h where one fits).
const (
	exitUsage    = 2   // bad flags, URLs or command line
	exitSoftware = 70  // EX_SOFTWARE: redlock itself failed (an error the library does not document)
	exitTempFail = 75  // EX_TEMPFAIL: the lock was not acquired within --wait, or the cluster did not answer
	exitNoPerm   = 77  // EX_NOPERM: so many nodes refused the credentials or failed TLS that no quorum is possible
	exitNoExec   = 126 // the command was found but could not be run, as in sh
	exitNotFound = 127 // the command was not found, as in sh
)

// driftFactor is the clock drift (a fraction of the ttl) that exec's locks allow for: the
// library's default, given to it explicitly so that --ttl is checked against the same
// allowance before any node is asked.
const driftFactor = 0.01

// forwarded are the signals redlock exec passes on to the command.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

const execUsage = `usage: redlock exec (--nodes URL,URL,... | --cluster URL --votes N) --key NAME [flags] -- COMMAND [ARG...]

Acquires the lock on a quorum of the nodes, runs COMMAND while keeping the lock extended, and
releases it when COMMAND ends. COMMAND runs in a process group of its own, in the terminal's
foreground when redlock exec is there. Signals sent to redlock exec are passed on to the group.
If the lock is lost, the group gets SIGTERM, then SIGKILL after --grace, or at once when
COMMAND has exited. If redlock exec dies, even by SIGKILL, its guard (a second redlock
process) kills the group, and on Linux the kernel kills COMMAND (a parent-death signal).

No tool covers everything: a process that leaves the group (setsid, a daemon) or re-parents
itself; what COMMAND leaves running when it exits (it runs on without the lock); COMMAND's
children when the guard dies with redlock exec (kill -9 of both), and COMMAND itself then off
Linux; a pause of the whole machine. There the resource must protect itself: with --fence,
COMMAND finds the lock's fencing token in $REDLOCK_FENCE; hand it to the resource so that it
refuses a holder whose lock has expired. COMMAND finds the lock's token in $REDLOCK_TOKEN: a
process it hands it to takes the lock over with Client.Resume (until COMMAND ends: then it is
released). The lock carries --owner, by default this host's name and exec's process id, for
redlock status to show.

Exit status: COMMAND's (128+n when signal n killed it), or
  2      bad flags, URLs or command line, or a --ttl no longer than the clock drift it allows for
  70     redlock itself failed (an error the library does not document)
  75     the lock was not acquired within --wait, or the --cluster did not answer
  77     so many nodes refused the credentials or failed TLS that no quorum is possible
  126    COMMAND was found but could not be run
  127    COMMAND was not found
  128+n  signal n arrived while waiting for the lock (nothing was run)

`

// execConfig is what the command line asks redlock exec to do.
type execConfig struct {
	nodeFlags
	nodes   []node
	ttl     time.Duration
	wait    time.Duration
	grace   time.Duration
	fence   bool
	owner   string // stored with the lock's token, "" for none
	verbose bool
	argv    []string // the command and its arguments
}

// flagSet returns the flags of redlock exec, set into c when parsed; its output is discarded
// (see commandLineError).
func (c *execConfig) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("redlock exec", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.register(fs)
	fs.DurationVar(&c.ttl, "ttl", 10*time.Second, "the lock's time to live; it is extended by as much whenever a third of it is left")
	fs.DurationVar(&c.wait, "wait", 0, "how long to wait for the lock; 0 makes one attempt")
	fs.DurationVar(&c.grace, "grace", 10*time.Second, "after the lock is lost, how long the command has between SIGTERM and SIGKILL")
	fs.BoolVar(&c.fence, "fence", false, "acquire with a fencing token (one more round trip) and give it to the command in $REDLOCK_FENCE")
	fs.StringVar(&c.owner, "owner", defaultOwner(), "who holds the lock, stored with it for redlock status to show: 1 to 128 bytes of printable text, \"\" for none")
	fs.BoolVar(&c.verbose, "verbose", false, "report acquisition, loss and release on stderr")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), execUsage)
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses args with fs into c, checks them and reads the nodes.
func (c *execConfig) parseArgs(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	nodes, err := c.parse()
	switch {
	case err != nil:
		return err
	case fs.NArg() == 0:
		return errors.New("no command to run (put it after --)")
	case c.ttl <= 0 || c.ttl%time.Millisecond != 0:
		return fmt.Errorf("--ttl %v must be a positive whole number of milliseconds", c.ttl)
	case c.ttl <= clock.Drift(c.ttl, driftFactor):
		return fmt.Errorf("--ttl %v must be longer than the clock drift it allows for, %v", c.ttl, clock.Drift(c.ttl, driftFactor))
	case c.wait < 0:
		return fmt.Errorf("--wait %v must not be negative", c.wait)
	case c.grace < 0:
		return fmt.Errorf("--grace %v must not be negative", c.grace)
	case c.owner != "":
		if err := checkOptions(redlock.WithOwner(c.owner)); err != nil {
			return fmt.Errorf("--owner: %v", strings.TrimPrefix(err.Error(), "redlock: "))
		}
	}
	c.nodes, c.argv = nodes, fs.Args()
	return nil
}

func runExec(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	e := &execution{stdout: stdout, stderr: stderr}
	fs := e.flagSet()
	if err := e.parseArgs(fs, args); err != nil {
		return commandLineError(fs, err, stdout, stderr)
	}
	return e.run(ctx)
}

// An execution is one run of redlock exec.
type execution struct {
	execConfig
	stdout, stderr io.Writer
	sigs           chan os.Signal // the signals caught, to pass on to the command
	reported       []bool         // by node: its failure was reported already
	mu             sync.Mutex     // one message at a time on stderr (see finish)
}

// errorf tells the user on stderr.
func (e *execution) errorf(format string, a ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fmt.Fprintf(e.stderr, "redlock exec: "+format+"\n", a...)
}

// logf tells the user on stderr with --verbose.
func (e *execution) logf(format string, a ...any) {
	if e.verbose {
		e.errorf(format, a...)
	}
}

func (e *execution) run(ctx context.Context) int {
	// Signals are caught from the start: while waiting for the lock they end the wait, later
	// they go to the command.
	e.sigs = make(chan os.Signal, 8)
	signal.Notify(e.sigs, forwarded...)
	defer signal.Stop(e.sigs)

	cs := clients(e.nodes)
	locker, code := e.connect(ctx, cs)
	var lock *redlock.Lock
	if locker != nil {
		if lock, code = e.acquire(ctx, locker); lock != nil {
			code = e.runCommand(lock)
		}
	}
	e.finish(ctx, lock, locker, cs)
	return code
}

// exitBudget bounds what exec does once its command has ended (release the lock, close the
// Client and the connections) so that it exits within 2 s of the command whatever the nodes
// do: a node that has not answered the release by then may keep the key until its ttl ends.
const exitBudget = time.Second

// finish releases lock (when not nil) and closes locker (when not nil) and cs, giving up after
// exitBudget. What it gave up on is left to the process's exit, which follows at once: the
// library bounds Unlock by the node timeout, which --node-timeout may make long, and Close by
// the calls it waits for.
func (e *execution) finish(ctx context.Context, lock *redlock.Lock, locker *redlock.Client, cs []redis.UniversalClient) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if lock != nil {
			e.release(ctx, lock)
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
		e.logf("release and clean-up not done after %v; exiting without them (a node that has not answered may keep the key until its ttl ends)", exitBudget)
	}
}

// connect checks the nodes and returns the Client over them, or nil and the exit status.
func (e *execution) connect(ctx context.Context, cs []redis.UniversalClient) (*redlock.Client, int) {
	if !e.preflight(ctx, cs) {
		return nil, exitNoPerm
	}
	if e.cluster != "" {
		nodes, _, err := e.expand(ctx, e.nodes, cs)
		if err != nil { // the cluster did not answer
			e.errorf("%v", err)
			return nil, exitTempFail
		}
		e.nodes, e.reported = nodes, nil // the votes, numbered anew
	}
	opts := []redlock.Option{redlock.WithNodeTimeout(e.nodeTimeout), redlock.WithKeyPrefix(e.prefix), redlock.WithDriftFactor(driftFactor)}
	if e.fence {
		opts = append(opts, redlock.WithFencing())
	}
	if e.owner != "" {
		opts = append(opts, redlock.WithOwner(e.owner))
	}
	locker, err := e.locker(ctx, cs, opts...)
	switch {
	case err != nil && e.cluster != "": // read again, the cluster did not answer
		e.errorf("%v", err)
		return nil, exitTempFail
	case err != nil: // the flags were checked: nothing New refuses is left
		e.errorf("%v", err)
		return nil, exitSoftware
	}
	return locker, 0
}

// acquire takes the lock, or returns nil and the exit status.
func (e *execution) acquire(ctx context.Context, locker *redlock.Client) (*redlock.Lock, int) {
	if e.wait > 0 {
		e.logf("waiting up to %v for %q", e.wait, e.key)
	}
	lock, sig, err := takeLock(ctx, locker, e.key, e.ttl, e.wait, e.sigs)
	switch {
	case sig != nil:
		e.errorf("%v while waiting for the lock", sig)
		return nil, 128 + int(sig.(syscall.Signal))
	case err != nil:
		return nil, e.notAcquired(err)
	}
	// The library keeps the lock from now until Unlock (see finish): a loss closes lock.Lost,
	// and lock.Err says why. KeepAlive fails only for a lock that ended already, whose Lost is
	// closed: supervise sees to it.
	lock.KeepAlive(e.ttl)
	e.logf("acquired %q on a quorum of %s, valid for %v", e.key, count(len(e.nodes), "node"), time.Until(lock.Until()).Round(time.Millisecond))
	if e.fence {
		e.logf("fencing token %d", lock.Fence())
	}
	return lock, 0
}

// notAcquired says why the lock was not acquired and returns the exit status.
func (e *execution) notAcquired(err error) int {
	if e.wait > 0 {
		e.errorf("lock %q not acquired within %v", e.key, e.wait)
	} else {
		e.errorf("lock %q not acquired", e.key)
	}
	waitOver := errors.Is(err, context.DeadlineExceeded)
	for _, line := range describe(err, e.nodes) {
		// The sentinel and the end of the wait are said above already, also for the nodes
		// whose answer the end of the wait cut off; and preflight said what failed before.
		i, ok := lineNode(line)
		if line == redlock.ErrNotAcquired.Error() || line == context.DeadlineExceeded.Error() ||
			waitOver && strings.HasSuffix(line, ": "+context.DeadlineExceeded.Error()) ||
			ok && i < len(e.reported) && e.reported[i] {
			continue
		}
		fmt.Fprintf(e.stderr, "  %s\n", line)
	}
	if errors.Is(err, redlock.ErrNotAcquired) {
		return exitTempFail
	}
	return exitSoftware
}

// release gives the lock back, whatever ended the command, on a context of its own.
func (e *execution) release(ctx context.Context, lock *redlock.Lock) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), exitBudget)
	defer cancel()
	if err := lock.Unlock(uctx); err != nil {
		e.logf("release: %s", strings.Join(describe(err, e.nodes), "; "))
	} else {
		e.logf("released %q", e.key)
	}
}

// preflight pings every node once so that credentials a node refuses show at once, naming the
// node, rather than as a wait for a lock that can never be had. It reports every node that
// failed, and marks it so that it is not reported again if the lock is not acquired; it
// returns false only when the refusals leave no quorum.
func (e *execution) preflight(ctx context.Context, cs []redis.UniversalClient) bool {
	refused := 0
	e.reported = make([]bool, len(cs))
	for i, err := range ping(ctx, cs, e.nodes, e.nodeTimeout) {
		if err == nil {
			continue
		}
		if authFailure(err) {
			refused++
		}
		e.errorf("node %d (%s): %v", i, e.nodes[i].name, err)
		e.reported[i] = true
	}
	if len(cs)-refused < quorum.Of(len(cs)) {
		e.errorf("%d of %s refused the credentials or failed TLS; no quorum is possible", refused, count(len(cs), "node"))
		return false
	}
	return true
}

// takeLock takes the lock: one attempt when wait is 0, else attempts until wait has passed. A
// signal from sigs ends the wait and is returned.
func takeLock(ctx context.Context, locker *redlock.Client, key string, ttl, wait time.Duration, sigs <-chan os.Signal) (*redlock.Lock, os.Signal, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		l   *redlock.Lock
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		if wait == 0 {
			r.l, r.err = locker.TryLock(ctx, key, ttl)
		} else {
			wctx, cancel := context.WithTimeout(ctx, wait)
			r.l, r.err = locker.Lock(wctx, key, ttl)
			cancel()
		}
		done <- r
	}()
	select {
	case r := <-done:
		return r.l, nil, r.err
	case s := <-sigs:
		cancel()
		r := <-done
		if r.l != nil { // acquired just as the signal came: give it back
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			r.l.Unlock(uctx)
			cancel()
		}
		return nil, s, nil
	}
}
