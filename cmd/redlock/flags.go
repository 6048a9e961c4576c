package main

import (
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/quorumlock/redlock/clock"
	"github.com/quorumlock/redlock/internal/wire"
)

// The command line the subcommands share: how a subcommand's flags are made and their errors
// told, the flags that name the nodes, and the flags that say how exec and elect run COMMAND.

// newFlagSet returns the flag set of the subcommand name ("redlock exec"), its output discarded
// (see commandLineError), whose usage is the text usage followed by the flags' defaults.
func newFlagSet(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	return fs
}

// usageError tells that the command line of cmd ("redlock exec") is wrong in two lines, the
// error and where the usage is, so that the error does not scroll away behind the usage.
func usageError(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "%s: %v\nrun '%s -h' for usage\n", cmd, err, cmd)
	return exitUsage
}

// commandLineError ends a subcommand whose command line fs (made with its output discarded)
// refused with err: -h prints the usage on stdout, anything else is a usageError.
func commandLineError(fs *flag.FlagSet, err error, stdout, stderr io.Writer) int {
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fs.Usage()
		return 0
	}
	return usageError(stderr, fs.Name(), err)
}

// A subcommand is what the command line of one of redlock's commands sets up.
type subcommand interface {
	// flagSet returns the command's flags (see newFlagSet), set into it when parsed.
	flagSet() *flag.FlagSet
	// checkArgs checks what the flags were set to and the arguments fs left, and reads the
	// nodes.
	checkArgs(fs *flag.FlagSet) error
}

// parseCommandLine sets cmd up from args. When they do not do, it reports done, and the exit
// status, having said why (see commandLineError).
func parseCommandLine(cmd subcommand, args []string, stdout, stderr io.Writer) (code int, done bool) {
	fs := cmd.flagSet()
	err := fs.Parse(args)
	if err == nil {
		err = cmd.checkArgs(fs)
	}
	if err != nil {
		return commandLineError(fs, err, stdout, stderr), true
	}
	return 0, false
}

// nodeFlags are the flags every subcommand that talks to the nodes shares.
type nodeFlags struct {
	nodes       string
	cluster     string
	votes       int
	prefix      string
	nodeTimeout time.Duration
	caFile      string
}

func (f *nodeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.nodes, "nodes", "", "comma-separated `URLs` of the independent Redis masters, "+
		"redis://[user:password@]host:port[/db] or rediss://... for TLS, or of whole Redis Clusters, "+
		"redis+cluster://[user:password@]host:port[?addr=host:port&addr=...] or rediss+cluster://... (default $REDLOCK_NODES)")
	fs.StringVar(&f.cluster, "cluster", "", "instead of --nodes, the `URL` of one Redis Cluster whose masters give the votes, "+
		"redis+cluster://... or rediss+cluster://... (needs --votes)")
	fs.IntVar(&f.votes, "votes", 0, "with --cluster, how many `votes`: independent keys on as many distinct masters")
	fs.StringVar(&f.prefix, "prefix", "", "a `prefix` put before the key on the nodes")
	fs.DurationVar(&f.nodeTimeout, "node-timeout", 500*time.Millisecond, "how long one call waits for one node")
	fs.StringVar(&f.caFile, "cacert", "", "a PEM `file` of CA certificates to verify rediss:// nodes with, instead of the system's")
}

// registerKey adds --key, the lock's name, set into key.
func registerKey(fs *flag.FlagSet, key *string) {
	fs.StringVar(key, "key", "", "the lock's `name` (required)")
}

// checkName checks the name that flag gives (--key, --name), as the library would, before any
// node is asked.
func checkName(flag, name string) error {
	if name == "" {
		return fmt.Errorf("%s is required", flag)
	}
	if err := wire.CheckKey(name); err != nil {
		return fmt.Errorf("%s: %v", flag, err)
	}
	return nil
}

// parse checks the flags and returns the nodes they name.
func (f *nodeFlags) parse() ([]node, error) {
	// What the library would refuse, refused before any node is asked.
	if _, err := wire.NewNames(f.prefix); err != nil {
		return nil, fmt.Errorf("--prefix: %v", err)
	}
	if f.nodeTimeout <= 0 {
		return nil, fmt.Errorf("--node-timeout %v must be positive", f.nodeTimeout)
	}
	spec := f.nodes
	switch {
	case f.cluster != "" && f.nodes != "":
		return nil, errors.New("give --nodes or --cluster, not both")
	case f.cluster != "" && f.votes < 1:
		return nil, fmt.Errorf("--cluster needs --votes, at least 1 (got %d)", f.votes)
	case f.cluster == "" && f.votes != 0:
		return nil, errors.New("--votes goes with --cluster")
	case f.cluster != "":
		spec = f.cluster
	case spec == "":
		spec = os.Getenv("REDLOCK_NODES")
	}
	if spec == "" {
		return nil, errors.New("no nodes: give --nodes or set REDLOCK_NODES")
	}
	nodes, err := parseNodes(spec)
	if err == nil && f.cluster != "" && (len(nodes) != 1 || nodes[0].cluster == nil) {
		err = errors.New("--cluster takes one redis+cluster:// or rediss+cluster:// URL")
	}
	if err != nil || f.caFile == "" {
		return nodes, err
	}
	if err := f.trust(nodes); err != nil {
		return nil, err
	}
	return nodes, nil
}

// trust makes the TLS nodes verify their servers against the CA certificates of --cacert.
func (f *nodeFlags) trust(nodes []node) error {
	pem, err := os.ReadFile(f.caFile)
	if err != nil {
		return fmt.Errorf("--cacert: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("--cacert: no PEM certificate in %s", f.caFile)
	}
	for _, n := range nodes {
		if n.opts != nil && n.opts.TLSConfig != nil {
			n.opts.TLSConfig.RootCAs = pool
		}
		if n.cluster != nil && n.cluster.TLSConfig != nil {
			n.cluster.TLSConfig.RootCAs = pool
		}
	}
	return nil
}

// registerRun adds the flags that say how to run the command under what ("lock", "term").
func (r *runner) registerRun(fs *flag.FlagSet, what string) {
	r.register(fs)
	fs.DurationVar(&r.ttl, "ttl", 10*time.Second, "the "+what+"'s time to live; it is extended by as much whenever a third of it is left")
	fs.DurationVar(&r.wait, "wait", 0, "how long to wait for the "+what+"; 0 makes one attempt")
	fs.DurationVar(&r.grace, "grace", 10*time.Second, "after the "+what+" is lost, how long the command has between SIGTERM and SIGKILL")
	fs.BoolVar(&r.verbose, "verbose", false, "report on stderr when the "+what+" is taken, lost and given back")
}

// parseRun checks the flags of registerRun and the command line left after fs parsed it, and
// reads the nodes.
func (r *runner) parseRun(fs *flag.FlagSet) error {
	nodes, err := r.parse()
	switch {
	case err != nil:
		return err
	case fs.NArg() == 0:
		return errors.New("no command to run (put it after --)")
	}
	if err := checkTTL(r.ttl); err != nil {
		return err
	}
	switch {
	case r.wait < 0:
		return fmt.Errorf("--wait %v must not be negative", r.wait)
	case r.grace < 0:
		return fmt.Errorf("--grace %v must not be negative", r.grace)
	}
	r.nodes, r.argv = nodes, fs.Args()
	return nil
}

// checkTTL refuses a --ttl that no lock may have, as the library would, before any node is asked.
func checkTTL(ttl time.Duration) error {
	switch d := clock.Drift(ttl, driftFactor); {
	case ttl <= 0 || ttl%time.Millisecond != 0:
		return fmt.Errorf("--ttl %v must be a positive whole number of milliseconds", ttl)
	case ttl <= d:
		return fmt.Errorf("--ttl %v must be longer than the clock drift it allows for, %v", ttl, d)
	}
	return nil
}
