package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/redlock"
)

// Exit statuses of redlock exec besides the child's own (sysexits.h where one fits).
const (
	exitUsage    = 2   // bad flags, URLs or command line
	exitNotFound = 127 // the command was not found, as in sh
	exitNoExec   = 126 // the command was found but could not be run, as in sh
	exitTempFail = 75  // EX_TEMPFAIL: the lock was not acquired within --wait
	exitNoPerm   = 77  // EX_NOPERM: so many nodes refused the credentials (or failed TLS verification) that no quorum is possible
	exitSoftware = 70  // EX_SOFTWARE: redlock itself failed
)

// forwarded are the signals redlock exec passes on to the command.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

func runExec(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("redlock exec", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var nf nodeFlags
	nf.register(fs)
	ttl := fs.Duration("ttl", 10*time.Second, "the lock's time to live; it is extended by as much whenever a third of it is left")
	wait := fs.Duration("wait", 0, "how long to wait for the lock; 0 makes one attempt")
	grace := fs.Duration("grace", 10*time.Second, "after the lock is lost, how long the command has between SIGTERM and SIGKILL")
	fence := fs.Bool("fence", false, "acquire with a fencing token (one more round trip) and give it to the command in $REDLOCK_FENCE")
	verbose := fs.Bool("verbose", false, "report acquisition, loss and release on stderr")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: redlock exec (--nodes URL,URL,... | --cluster URL --votes N) --key NAME [flags] -- COMMAND [ARG...]\n\n"+
			"Acquires the lock on a quorum of the nodes, runs COMMAND while keeping the lock extended, and\n"+
			"releases it when COMMAND ends. If the lock is lost, COMMAND gets SIGTERM, then SIGKILL after\n"+
			"--grace. Signals sent to redlock exec are passed on to COMMAND. With --fence, COMMAND finds\n"+
			"the lock's fencing token in $REDLOCK_FENCE: hand it to the resource so that it can refuse a\n"+
			"holder whose lock has expired. COMMAND finds the lock's token in $REDLOCK_TOKEN: a process it\n"+
			"hands it to takes the lock over with Client.Resume (until COMMAND ends: then it is released).\n\n"+
			"Exit status: COMMAND's (128+n when killed by signal n); 75 when the lock was not acquired\n"+
			"within --wait; 77 when too many nodes refused the credentials or failed TLS verification;\n2 for bad flags or URLs; "+
			"126/127 when COMMAND could not be run or found.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "redlock exec: "+format+"\n", a...)
		return exitUsage
	}
	nodes, err := nf.parse()
	switch {
	case err != nil:
		return usageErr("%v", err)
	case fs.NArg() == 0:
		return usageErr("no command to run (put it after --)")
	case *ttl <= 0 || *ttl%time.Millisecond != 0:
		return usageErr("--ttl %v must be a positive whole number of milliseconds", *ttl)
	case *wait < 0:
		return usageErr("--wait %v must not be negative", *wait)
	case *grace < 0:
		return usageErr("--grace %v must not be negative", *grace)
	}
	logf := func(format string, a ...any) {
		if *verbose {
			fmt.Fprintf(stderr, "redlock exec: "+format+"\n", a...)
		}
	}

	// Signals are caught from the start: while waiting for the lock they end the wait, later
	// they go to the command.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)

	cs := clients(nodes)
	defer closeClients(cs)
	if code, ok := preflight(ctx, cs, nodes, nf.nodeTimeout, stderr); !ok {
		return code
	}
	nodes, _, err = nf.expand(ctx, nodes, cs)
	if err != nil { // the cluster did not answer
		fmt.Fprintf(stderr, "redlock exec: %v\n", err)
		return exitTempFail
	}
	opts := []redlock.Option{redlock.WithNodeTimeout(nf.nodeTimeout), redlock.WithKeyPrefix(nf.prefix)}
	if *fence {
		opts = append(opts, redlock.WithFencing())
	}
	locker, err := nf.locker(ctx, cs, opts...)
	if err != nil {
		return usageErr("%v", err)
	}
	defer locker.Close()

	if *wait > 0 {
		logf("waiting up to %v for %q", *wait, nf.key)
	}
	lock, sig, err := acquire(ctx, locker, nf.key, *ttl, *wait, sigs)
	if sig != nil {
		fmt.Fprintf(stderr, "redlock exec: %v while waiting for the lock\n", sig)
		return 128 + int(sig.(syscall.Signal))
	}
	if err != nil {
		if *wait > 0 {
			fmt.Fprintf(stderr, "redlock exec: lock %q not acquired within %v\n", nf.key, *wait)
		} else {
			fmt.Fprintf(stderr, "redlock exec: lock %q not acquired\n", nf.key)
		}
		waitOver := errors.Is(err, context.DeadlineExceeded)
		for _, line := range describe(err, nodes) {
			// The sentinel and the end of the wait are said above already, also for the nodes
			// whose answer the end of the wait cut off.
			if line == redlock.ErrNotAcquired.Error() || line == context.DeadlineExceeded.Error() ||
				waitOver && strings.HasSuffix(line, ": "+context.DeadlineExceeded.Error()) {
				continue
			}
			fmt.Fprintf(stderr, "  %s\n", line)
		}
		if errors.Is(err, redlock.ErrNotAcquired) {
			return exitTempFail
		}
		return exitSoftware
	}
	logf("acquired %q on a quorum of %d nodes, valid for %v", nf.key, len(nodes), time.Until(lock.Until()).Round(time.Millisecond))
	if *fence {
		logf("fencing token %d", lock.Fence())
	}

	defer func() {
		// Released whatever ended the command, on a context of its own.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*nf.nodeTimeout)
		defer cancel()
		if err := lock.Unlock(uctx); err != nil {
			logf("release: %s", strings.Join(describe(err, nodes), "; "))
		} else {
			logf("released %q", nf.key)
		}
	}()

	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	cmd.Env = childEnv(os.Environ(), lock.Fence(), lock.Token())
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "redlock exec: %v\n", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return exitNotFound
		}
		return exitNoExec
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()

	h := hold(lock, *ttl)
	defer h.stop()
	var kill <-chan time.Time
	lost := lock.Lost()
	for {
		select {
		case <-exited:
			h.stop()
			return status(cmd.ProcessState)
		case s := <-sigs:
			logf("passing %v to the command", s)
			cmd.Process.Signal(s)
		case <-lost:
			lost = nil
			fmt.Fprintf(stderr, "redlock exec: lock %q lost; sending SIGTERM, SIGKILL in %v\n", nf.key, *grace)
			for _, line := range describe(h.err(), nodes) {
				if line != redlock.ErrNotHeld.Error() {
					fmt.Fprintf(stderr, "  %s\n", line)
				}
			}
			cmd.Process.Signal(syscall.SIGTERM)
			t := time.NewTimer(*grace)
			defer t.Stop()
			kill = t.C
		case <-kill:
			kill = nil
			fmt.Fprintf(stderr, "redlock exec: command still running %v after SIGTERM; sending SIGKILL\n", *grace)
			cmd.Process.Kill()
		}
	}
}

// preflight pings every node once so that credentials a node refuses show at once, naming the
// node, rather than as a wait for a lock that can never be had. It reports every node that
// failed and stops (ok false) only when the refusals leave no quorum.
func preflight(ctx context.Context, cs []redis.UniversalClient, nodes []node, timeout time.Duration, stderr io.Writer) (code int, ok bool) {
	refused := 0
	for i, err := range ping(ctx, cs, timeout) {
		if err == nil {
			continue
		}
		if authFailure(err) {
			refused++
		}
		fmt.Fprintf(stderr, "redlock exec: node %d (%s): %v\n", i, nodes[i].name, err)
	}
	if len(cs)-refused < len(cs)/2+1 {
		fmt.Fprintf(stderr, "redlock exec: %d of %d nodes refused the credentials or failed TLS verification; no quorum is possible\n", refused, len(cs))
		return exitNoPerm, false
	}
	return 0, true
}

// acquire takes the lock: one attempt when wait is 0, else attempts until wait has passed. A
// signal from sigs ends the wait and is returned.
func acquire(ctx context.Context, locker *redlock.Client, key string, ttl, wait time.Duration, sigs <-chan os.Signal) (*redlock.Lock, os.Signal, error) {
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

// holder keeps a lock extended while the command runs: when a third of the ttl is left, and
// again soon after a failed extension, until stopped. The library decides when the lock is
// lost (Lock.Lost): its validity passed without a successful extension, or an extension found
// the key gone from a majority. Client.Do keeps a lock the same way, but Do also acquires, with
// one context for the wait and for fn, and exec bounds the wait alone (--wait).
type holder struct {
	quit chan struct{}
	done chan struct{}
	once sync.Once

	mu      sync.Mutex
	lastErr error // the last failed extension's error
}

func hold(lock *redlock.Lock, ttl time.Duration) *holder {
	h := &holder{quit: make(chan struct{}), done: make(chan struct{})}
	lost := lock.Lost()
	pause := func(d time.Duration) bool {
		t := time.NewTimer(max(d, 0))
		defer t.Stop()
		select {
		case <-h.quit:
			return false
		case <-lost:
			return false
		case <-t.C:
			return true
		}
	}
	go func() {
		defer close(h.done)
		for pause(time.Until(lock.Until()) - ttl/3) {
			if err := lock.Extend(context.Background(), ttl); err != nil {
				h.mu.Lock()
				h.lastErr = err
				h.mu.Unlock()
				if !pause(ttl / 10) {
					return
				}
			}
		}
	}()
	return h
}

// err returns the last failed extension's error, nil if none failed.
func (h *holder) err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastErr
}

// stop ends the extension loop and waits for it; calling it again does nothing.
func (h *holder) stop() {
	h.once.Do(func() { close(h.quit) })
	<-h.done
}

// childEnv is the command's environment: env with REDLOCK_TOKEN set to the lock's token, so
// that the command can hand the lock on (Client.Resume takes it over), and REDLOCK_FENCE to its
// fencing token when it has one, removed otherwise, so that a command never sees an outer
// lock's fencing token.
func childEnv(env []string, fence uint64, token string) []string {
	env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, "REDLOCK_FENCE=") || strings.HasPrefix(kv, "REDLOCK_TOKEN=")
	})
	env = append(env, "REDLOCK_TOKEN="+token)
	if fence != 0 {
		env = append(env, "REDLOCK_FENCE="+strconv.FormatUint(fence, 10))
	}
	return env
}

// status is the exit status a shell would give for the command's end.
func status(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
