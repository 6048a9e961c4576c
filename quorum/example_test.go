package quorum_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/redlock/quorum"
)

// The size of a majority, and how many nodes each holder of a semaphore must hold.
func ExampleOf() {
	fmt.Println(quorum.Of(3), quorum.Of(5), quorum.Of(6))
	fmt.Println(quorum.Permits(5, 1), quorum.Permits(5, 2), quorum.Permits(5, 4))
	// Output:
	// 2 3 4
	// 3 4 5
}

// Five nodes are asked at once; the round is decided as soon as three said yes, and the
// replies still in flight are read afterwards, for clean-up.
func ExampleStart() {
	slow := make(chan struct{})
	r := quorum.Start(context.Background(), nil, 5, func(ctx context.Context, node int) (string, error) {
		switch node {
		case 0, 1, 2:
			return fmt.Sprintf("yes from %d", node), nil
		case 3:
			return "", errors.New("refused")
		}
		<-slow // node 4 answers only after the decision
		return "late yes", nil
	})
	out := r.Decide(quorum.Of(5), nil, time.After(time.Second))
	fmt.Println("quorum:", out.Quorum)
	close(slow)
	r.Linger(&out, nil, time.After(time.Second))
	fmt.Println("replies:", len(out.Replies), "pending:", len(out.Pending))
	// Output:
	// quorum: true
	// replies: 5 pending: 0
}

// A read wants every answer it can have: Gather waits for every node until the deadline,
// whatever each says, so a node that fails at once does not cut the others short.
func ExampleRound_Gather() {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	r := quorum.Start(ctx, nil, 3, func(ctx context.Context, node int) (string, error) {
		switch node {
		case 0:
			return "", errors.New("connection refused") // at once
		case 1:
			time.Sleep(10 * time.Millisecond)
			return "held by a", nil
		}
		<-ctx.Done() // node 2 is silent
		return "", ctx.Err()
	})
	out := r.Gather(ctx.Done(), nil)
	fmt.Println("replies:", len(out.Replies), "pending:", out.Pending, "stopped:", out.Stopped)
	r.Rest(nil, func(quorum.Reply[string]) {}) // node 2's call, ended by ctx
	// Output:
	// replies: 2 pending: [2] stopped: true
}
