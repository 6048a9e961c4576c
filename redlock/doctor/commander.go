package doctor

import (
	"context"

	"github.com/quorumlock/redlock/redlock/driver"
)

// A Commander is a node that also sends any command the server knows, for what no script may
// run: Check reads a node's INFO, CONFIG GET, COMMAND INFO, ACL DRYRUN and TIME through it.
// The nodes of goredisnode, and those of the redlockrueidis and redlockvalkey modules, are
// Commanders; Check checks a node that is not one as far as Eval allows, and says what it could
// not check.
type Commander interface {
	driver.Node

	// Command sends args, a command and its arguments, once, and returns its reply as Eval
	// does (an int64, a string, a []any of such values, or nil), a map (RESP3) as a []any of
	// its keys and values in turn, and a server's error reply as an error with the server's
	// text. A node that cannot send a command to one server (a client of a whole Redis
	// Cluster) returns an error that wraps errors.ErrUnsupported.
	Command(ctx context.Context, args ...string) (any, error)
}
