package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/quorumlock/redlock/redlock"
)

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

// An execution is one run of redlock exec.
type execution struct {
	runner
	key   string
	fence bool
	owner string // stored with the lock's token, "" for none
}

// flagSet returns the flags of redlock exec (see newFlagSet), set into e when parsed.
func (e *execution) flagSet() *flag.FlagSet {
	fs := newFlagSet("redlock exec", execUsage)
	registerKey(fs, &e.key)
	e.registerRun(fs, "lock")
	fs.BoolVar(&e.fence, "fence", false, "acquire with a fencing token (one more round trip) and give it to the command in $REDLOCK_FENCE")
	fs.StringVar(&e.owner, "owner", defaultOwner(), "who holds the lock, stored with it for redlock status to show: 1 to 128 bytes of printable text without a comma, \"\" for none")
	return fs
}

// checkArgs checks the flags and the command, and reads the nodes (see subcommand).
func (e *execution) checkArgs(fs *flag.FlagSet) error {
	if err := checkName("--key", e.key); err != nil {
		return err
	}
	if err := e.parseRun(fs); err != nil {
		return err
	}
	if e.owner != "" {
		if err := checkOptions(redlock.WithOwner(e.owner)); err != nil {
			return fmt.Errorf("--owner: %v", strings.TrimPrefix(err.Error(), "redlock: "))
		}
	}
	return nil
}

func runExec(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	e := &execution{runner: runner{name: "redlock exec", stdout: stdout, stderr: stderr}}
	if code, done := parseCommandLine(e, args, stdout, stderr); done {
		return code
	}
	return e.run(ctx)
}

func (e *execution) run(ctx context.Context) int {
	var opts []redlock.Option
	if e.fence {
		opts = append(opts, redlock.WithFencing())
	}
	if e.owner != "" {
		opts = append(opts, redlock.WithOwner(e.owner))
	}
	return e.connected(ctx, opts, func(locker *redlock.Client) (int, func(context.Context)) {
		lock, code := e.acquire(ctx, locker)
		if lock == nil {
			return code, nil
		}
		code = e.runCommand(lock.Lost(), func() { e.reportLoss(lock.Err()) },
			envVar{"REDLOCK_TOKEN", lock.Token()}, envVar{"REDLOCK_FENCE", fenceVar(lock.Fence())})
		return code, func(ctx context.Context) {
			e.gaveBack("release", lock.Unlock(ctx), fmt.Sprintf("released %q", e.key))
		}
	})
}

// acquire takes the lock, or returns nil and the exit status.
func (e *execution) acquire(ctx context.Context, locker *redlock.Client) (*redlock.Lock, int) {
	if e.wait > 0 {
		e.logf("waiting up to %v for %q", e.wait, e.key)
	}
	try := func(ctx context.Context) (*redlock.Lock, error) { return locker.TryLock(ctx, e.key, e.ttl) }
	wait := func(ctx context.Context) (*redlock.Lock, error) { return locker.Lock(ctx, e.key, e.ttl) }
	unlock := func(ctx context.Context, l *redlock.Lock) { l.Unlock(ctx) }
	lock, code := take(ctx, &e.runner, "waiting for the lock", try, wait, unlock, e.notAcquired)
	if lock == nil {
		return nil, code
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
	return e.whyNot(err)
}

// reportLoss says that the lock was lost, and why (Lock.Err).
func (e *execution) reportLoss(why error) {
	e.errorf("lock %q lost; sending SIGTERM, SIGKILL in %v", e.key, e.grace)
	for _, line := range describe(why, e.nodes) {
		if line != redlock.ErrNotHeld.Error() {
			fmt.Fprintf(e.stderr, "  %s\n", line)
		}
	}
}
