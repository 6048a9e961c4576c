package faketime

import (
	"fmt"
	"os"
	"time"
)

// Set writes the setting file that Env names: from the next clock read on, the process's wall
// clock reads began + rate·(t − began) + offset, t being the true time and began about when
// libfaketime started in the process. A rate given from the first instant hangs redis-server
// 7.0.15 at start-up ("Unexpected recursive calls to clock_gettime()"): start the process with
// rate 1, and set the rate once it runs. The file is replaced whole, so the process reads the
// old setting or the new one, never a mix.
func Set(file string, offset time.Duration, rate float64) error {
	tmp := file + ".new"
	if err := os.WriteFile(tmp, fmt.Appendf(nil, "%+.6f x%.6f\n", offset.Seconds(), rate), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}
