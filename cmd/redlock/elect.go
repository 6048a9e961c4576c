package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/redlock"
)

const electUsage = `usage: redlock elect (--nodes URL,URL,... | --cluster URL --votes N) --name NAME --value V [flags] -- COMMAND [ARG...]
       redlock elect (--nodes URL,URL,... | --cluster URL --votes N) --name NAME --observe [-json]

Campaigns in the election NAME with the value V (an address, a host name: what the others need
to find the leader) until it leads: without --wait for as long as it takes, waiting in line
behind the leader as a standby does; with --wait D it gives up after D (exit 75), and with
--wait 0 after one attempt. It runs COMMAND while it leads, and resigns when COMMAND ends,
which makes the next candidate leader at once. COMMAND finds the term's number in
$REDLOCK_TERM: it increases from one leader to the next, a fencing token to hand to what the
leader writes to. COMMAND runs as under redlock exec: in a process group of its own, signals
passed on, a guard and a parent-death signal; if the term is lost, the group gets SIGTERM, then
SIGKILL after --grace, or at once when COMMAND has exited. A leader that dies without resigning
is followed when its --ttl has run out.

With --observe, it prints the leader now and then at every change, one line each, until
SIGINT or SIGTERM: 'leader "V" term N until 15:04:05.000' or 'no leader'; with -json,
{"value": V, "term": N, "until": RFC 3339}, value "" and term 0 for no leader.

Exit status: COMMAND's (128+n when signal n killed it), or
  0      --observe ended by a signal
  2      bad flags, URLs or command line, or a --ttl no longer than the clock drift it allows for
  70     redlock itself failed (an error the library does not document)
  75     not elected within --wait, or the --cluster did not answer
  77     so many nodes refused the credentials or failed TLS that no quorum is possible
  126    COMMAND was found but could not be run
  127    COMMAND was not found
  128+n  signal n arrived while campaigning (nothing was run)

`

// An electing is one run of redlock elect.
type electing struct {
	runner
	election string // --name
	value    string
	observe  bool
	json     bool
}

// flagSet returns the flags of redlock elect (see newFlagSet), set into el when parsed.
func (el *electing) flagSet() *flag.FlagSet {
	fs := newFlagSet("redlock elect", electUsage)
	fs.StringVar(&el.election, "name", "", "the election's `name` (required)")
	fs.StringVar(&el.value, "value", "", "the leader's `value` while this candidate leads: an address, a host name (required unless --observe)")
	el.registerRun(fs, "term")
	fs.Lookup("wait").Usage = "how long to campaign before giving up with exit 75; without --wait, until elected; 0 makes one attempt"
	fs.BoolVar(&el.observe, "observe", false, "run no command: print the leader now and at every change, until interrupted")
	fs.BoolVar(&el.json, "json", false, "with --observe, print each state as a JSON object")
	return fs
}

// checkArgs checks the flags and the command, and reads the nodes (see subcommand).
func (el *electing) checkArgs(fs *flag.FlagSet) error {
	if err := checkName("--name", el.election); err != nil {
		return err
	}
	if el.observe {
		return el.parseObserve(fs)
	}
	switch {
	case el.json:
		return errors.New("-json goes with --observe")
	case el.value == "":
		return errors.New("--value is required, unless --observe")
	}
	if err := wire.CheckValue(el.value); err != nil {
		return fmt.Errorf("--value: %v", err)
	}
	if err := el.parseRun(fs); err != nil {
		return err
	}
	if !given(fs, "wait") {
		el.wait = waitUnbounded
	}
	return nil
}

// given reports whether the command line set the flag name.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// parseObserve checks the command line of --observe and reads the nodes.
func (el *electing) parseObserve(fs *flag.FlagSet) error {
	switch {
	case el.value != "":
		return errors.New("--observe takes no --value: it does not campaign")
	case fs.NArg() > 0:
		return fmt.Errorf("--observe runs no command, got %q", fs.Args())
	}
	if err := checkTTL(el.ttl); err != nil {
		return err
	}
	nodes, err := el.parse()
	el.nodes = nodes
	return err
}

func runElect(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	el := &electing{runner: runner{name: "redlock elect", stdout: stdout, stderr: stderr}}
	if code, done := parseCommandLine(el, args, stdout, stderr); done {
		return code
	}
	if el.observe {
		return el.watch(ctx)
	}
	return el.run(ctx)
}

func (el *electing) run(ctx context.Context) int {
	return el.connected(ctx, nil, func(locker *redlock.Client) (int, func(context.Context)) {
		term, code := el.campaign(ctx, locker)
		if term == nil {
			return code, nil
		}
		code = el.runCommand(term.Lost(), func() {
			// Term has no Err: the reason of the loss is not known here.
			el.errorf("term %d of %q lost; sending SIGTERM, SIGKILL in %v", term.Term(), el.election, el.grace)
		}, envVar{"REDLOCK_TERM", fenceVar(term.Term())})
		return code, func(ctx context.Context) {
			el.gaveBack("resign", term.Resign(ctx), fmt.Sprintf("resigned from %q", el.election))
		}
	})
}

// campaign campaigns until it leads, or returns nil and the exit status.
func (el *electing) campaign(ctx context.Context, locker *redlock.Client) (*redlock.Term, int) {
	e, err := locker.Election(el.election, el.ttl)
	if err != nil { // the flags were checked: nothing Election refuses is left
		el.errorf("%v", err)
		return nil, exitSoftware
	}
	switch {
	case el.wait == waitUnbounded:
		el.logf("campaigning in %q until elected", el.election)
	case el.wait > 0:
		el.logf("campaigning up to %v in %q", el.wait, el.election)
	}
	try := func(ctx context.Context) (*redlock.Term, error) { return e.TryCampaign(ctx, el.value) }
	wait := func(ctx context.Context) (*redlock.Term, error) { return e.Campaign(ctx, el.value) }
	resign := func(ctx context.Context, t *redlock.Term) { t.Resign(ctx) }
	notElected := func(err error) int { return el.notElected(ctx, e, err) }
	term, code := take(ctx, &el.runner, "campaigning", try, wait, resign, notElected)
	if term == nil {
		return nil, code
	}
	el.logf("leading %q with %q in term %d, valid for %v", el.election, el.value, term.Term(), time.Until(term.Until()).Round(time.Millisecond))
	return term, 0
}

// notElected says why the campaign failed, and who leads if anyone, and returns the exit status.
func (el *electing) notElected(ctx context.Context, e *redlock.Election, err error) int {
	within := ""
	if el.wait > 0 {
		within = fmt.Sprintf(" within %v", el.wait)
	}
	if l, lerr := e.Leader(ctx); lerr == nil {
		el.errorf("not elected in %q%s; %q leads, term %d", el.election, within, l.Value, l.Term)
	} else {
		el.errorf("not elected in %q%s", el.election, within)
	}
	return el.whyNot(err)
}
