//go:build race

package simulate_test

import "runtime"

// Under the race detector the simulator's tests run on one P: with more, Go 1.26's race
// runtime can fail its own internal check ("ThreadSanitizer: CHECK failed: tsan_rtl.cpp:346")
// or crash while testing/synctest bubbles wake their goroutines, in runs that pass without
// -race (golang/go#78156). On one P no two goroutines run at once, and the tests check the same.
func init() { runtime.GOMAXPROCS(1) }
