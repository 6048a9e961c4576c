package simulate_test

import (
	"context"
	"fmt"

	"github.com/quorumlock/redlock/simulate"
)

// The single-node lock, SET NX PX on one node, while that node restarts without its data: a
// second buyer gets the lock while the first still works, and the stock is oversold. The run
// takes about half a second of real time (Scale 0.04 makes the 10 s TTL 400 ms).
func Example() {
	scs, err := simulate.Match("single-node-restart")
	if err != nil {
		fmt.Println(err)
		return
	}
	res := simulate.Run(context.Background(), scs[0], simulate.Options{Seed: 1, Scale: 0.04})
	fmt.Println(res.Scenario, "expected", res.Expected, "observed", res.Observed, "as expected:", res.OK)
	for _, fault := range res.Schedule {
		fmt.Println(fault)
	}
	// Output:
	// single-node-restart expected violation observed violation as expected: true
	// t=  0.00s client 1: first section works 8s, or until another client enters one
	// client 1 holds +2.40s: node A: crashes
	// client 1 holds +2.40s: node A: restarts empty (no persistence)
}
