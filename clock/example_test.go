package clock_test

import (
	"fmt"
	"time"

	"github.com/quorumlock/redlock/clock"
)

// A lock asked for at start with a 10 s ttl and the default drift factor (1 %) is valid, on
// the local clock, until 102 ms before start + ttl.
func ExampleDeadline() {
	start := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	fmt.Println(clock.Drift(10*time.Second, 0.01))
	fmt.Println(clock.Deadline(start, 10*time.Second, 0.01).Format(time.TimeOnly + ".000"))
	// Output:
	// 102ms
	// 12:00:09.898
}
