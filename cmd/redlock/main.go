// Command redlock is the command-line front of the redlock library: run the failure scenarios
// against in-memory Redis nodes (simulate), run a command under a lock held across independent
// Redis masters (exec), run a command while leading an election on them (elect), look at a
// lock on every node or at an election's leader (status), and check the nodes against the
// assumptions the lock rests on (doctor).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"
)

func main() {
	// go-redis logs failed dials itself; the commands report every node's failure in their
	// own words, naming the node by its redacted URL.
	redis.SetLogger(quiet{})
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: redlock <command> [flags]

commands:
  simulate  run the failure scenarios against Redis nodes (in memory, or real servers) and check the lock
  exec      run a command while holding a lock across Redis masters
  status    show a lock on every node and whether a quorum holds it, or an election's leader
  elect     run a command while leading an election, or watch who leads
  doctor    check the nodes against every assumption the lock's guarantee rests on

Run "redlock <command> -h" for a command's flags.
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "simulate":
		return runSimulate(ctx, args[1:], stdout, stderr)
	case "exec":
		return runExec(ctx, args[1:], stdout, stderr)
	case "status":
		return runStatus(ctx, args[1:], stdout, stderr)
	case "elect":
		return runElect(ctx, args[1:], stdout, stderr)
	case "doctor":
		return runDoctor(ctx, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		if name, ok := strings.CutPrefix(args[0], "-"); ok {
			return usageError(stderr, "redlock", fmt.Errorf("flag provided but not defined: -%s", strings.TrimPrefix(name, "-")))
		}
		return usageError(stderr, "redlock", fmt.Errorf("unknown command %q", args[0]))
	}
}

// count writes n and noun, in the plural unless n is 1: "1 node", "3 nodes".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
