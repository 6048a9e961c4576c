// Package faketime finds libfaketime and makes the environment of a process whose wall clock it
// sets: the simulator's real servers and the tests' use it.
package faketime

import (
	"errors"
	"os"
	"path/filepath"
)

// Hint is the command that installs libfaketime on Debian or Ubuntu.
const Hint = "apt-get install -y faketime"

// globs are where distributions install libfaketime.
var globs = []string{
	"/usr/lib/*/faketime/libfaketime.so.1",
	"/usr/lib/faketime/libfaketime.so.1",
	"/usr/lib64/faketime/libfaketime.so.1",
	"/usr/local/lib/faketime/libfaketime.so.1",
}

// Find returns the path of libfaketime's library, or an error saying what to install.
func Find() (string, error) {
	for _, g := range globs {
		if m, _ := filepath.Glob(g); len(m) > 0 {
			return m[0], nil
		}
	}
	return "", errors.New("libfaketime not found (" + Hint + ")")
}

// Env returns the environment of a process whose wall clock libfaketime (at lib) sets from the
// file setting, read at every clock read, while its monotonic clock stays true. The setting is
// libfaketime's: an offset in seconds and a rate, such as "-3600.000000 x1.000000".
func Env(lib, setting string) []string {
	preload := lib
	if md := mallocDebug(lib); md != "" {
		preload = md + " " + preload
	}
	return append(os.Environ(), "LD_PRELOAD="+preload, "FAKETIME_TIMESTAMP_FILE="+setting,
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
