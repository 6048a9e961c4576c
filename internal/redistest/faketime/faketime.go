// Package faketime runs a process, such as redis-server, under libfaketime with a clock that
// can be moved while it runs: the setting lives in a file that libfaketime reads at every
// reading of the clock. A rate given from the first instant (FAKETIME="x1.05" in the
// environment) hangs redis-server 7.0.15 at start-up ("Unexpected recursive calls to
// clock_gettime()"); a rate written to the file once the server runs does not. The simulator's
// real backend and the tests that need a server with a skewed clock both start servers so.
package faketime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// globs are where distributions install libfaketime.
var globs = []string{
	"/usr/lib/*/faketime/libfaketime.so.1",
	"/usr/lib/faketime/libfaketime.so.1",
	"/usr/lib64/faketime/libfaketime.so.1",
	"/usr/local/lib/faketime/libfaketime.so.1",
}

// ErrNotFound is Find's error when libfaketime is not installed.
var ErrNotFound = errors.New("libfaketime not found")

// Find returns the path of libfaketime's library, or ErrNotFound.
func Find() (string, error) {
	for _, g := range globs {
		if m, _ := filepath.Glob(g); len(m) > 0 {
			return m[0], nil
		}
	}
	return "", ErrNotFound
}

// Env returns environ with what makes a process run under lib (libfaketime) with its setting
// read from file, at every reading of the clock. The monotonic clock is left alone. Write the
// file (Set) before the process starts.
func Env(environ []string, lib, file string) []string {
	preload := lib
	if md := mallocDebug(lib); md != "" {
		preload = md + " " + preload
	}
	return append(environ, "LD_PRELOAD="+preload, "FAKETIME_TIMESTAMP_FILE="+file,
		"FAKETIME_NO_CACHE=1", "FAKETIME_DONT_FAKE_MONOTONIC=1")
}

// mallocDebug returns glibc's libc_malloc_debug beside libfaketime, "" when there is none.
// Loaded before libfaketime, it gives the server glibc's malloc: Debian's redis-server links
// jemalloc, whose start-up reads the clock while libfaketime is still starting, and libfaketime
// 0.9.10 then gives up and the server dies at once.
func mallocDebug(lib string) string {
	for _, p := range []string{
		filepath.Join(filepath.Dir(filepath.Dir(lib)), "libc_malloc_debug.so.0"),
		"/lib64/libc_malloc_debug.so.0",
		"/usr/lib64/libc_malloc_debug.so.0",
	} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// Set writes the setting to file: from the next reading on, the process's wall clock reads
// began + rate·(t − began) + offset, where t is the true time and began about when libfaketime
// started in the process. The file is replaced whole, so the process reads the old setting or
// the new one, never a mix.
func Set(file string, offset time.Duration, rate float64) error {
	setting := fmt.Sprintf("%+.6f x%.6f\n", offset.Seconds(), rate)
	tmp := file + ".new"
	if err := os.WriteFile(tmp, []byte(setting), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}
