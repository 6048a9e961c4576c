package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A bad flag or argument prints the error and one line pointing at help, not the whole usage
// that would scroll the error away.
func TestBadFlagsPrintOneLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"exec", "--colour", "red", "--", "true"}, "redlock exec: flag provided but not defined: -colour\nrun 'redlock exec -h' for usage\n"},
		{[]string{"exec", "--ttl", "soon", "--", "true"}, "redlock exec: invalid value \"soon\" for flag -ttl: parse error\nrun 'redlock exec -h' for usage\n"},
		{[]string{"exec", "--nodes", "redis://127.0.0.1:1", "--key", "k"}, "redlock exec: no command to run (put it after --)\nrun 'redlock exec -h' for usage\n"},
		{[]string{"status", "--colour"}, "redlock status: flag provided but not defined: -colour\nrun 'redlock status -h' for usage\n"},
		{[]string{"status", "--nodes", "redis://127.0.0.1:1", "--key", "k", "extra"}, "redlock status: unexpected arguments [\"extra\"]\nrun 'redlock status -h' for usage\n"},
		{[]string{"--colour"}, "redlock: flag provided but not defined: -colour\nrun 'redlock -h' for usage\n"},
		{[]string{"nope"}, "redlock: unknown command \"nope\"\nrun 'redlock -h' for usage\n"},
	} {
		code, stdout, stderr := runCLI(t, tc.args...)
		if code != exitUsage || stdout != "" || stderr != tc.want {
			t.Errorf("%q: exit %d, stdout %q, stderr\n%s\nwant exit 2 and\n%s", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

// exec -h prints the usage on stdout, and it lists every exit status exec can return.
func TestExecHelpListsEveryExitStatus(t *testing.T) {
	code, stdout, stderr := runCLI(t, "exec", "-h")
	if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "usage: redlock exec") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	_, section, _ := strings.Cut(stdout, "Exit status:")
	section, _, _ = strings.Cut(section, "\n\n")
	for _, s := range execStatuses {
		if !regexp.MustCompile(`\b` + strconv.Itoa(s) + `\b`).MatchString(section) {
			t.Errorf("exit status %d is not in the usage's exit statuses:\n%s", s, section)
		}
	}
	if !strings.Contains(section, "128+n") {
		t.Errorf("the usage does not say 128+n:\n%s", section)
	}
}

// execStatuses are the exit statuses of redlock exec besides the command's own.
var execStatuses = []int{exitUsage, exitSoftware, exitTempFail, exitNoPerm, exitNoExec, exitNotFound}

// A ttl the library would refuse (no longer than its clock drift allowance) is a usage error,
// found before any node is asked, like every other bad flag.
func TestExecInvalidTTLIsAUsageError(t *testing.T) {
	for _, ttl := range []string{"1ms", "2ms"} {
		code, stdout, stderr := runCLI(t, "exec", "--nodes", "redis://127.0.0.1:1", "--key", "k", "--ttl", ttl, "--", "true")
		want := fmt.Sprintf("redlock exec: --ttl %s must be longer than the clock drift it allows for", ttl)
		if code != exitUsage || stdout != "" || !strings.HasPrefix(stderr, want) || strings.Contains(stderr, "dial") {
			t.Errorf("--ttl %s: exit %d, stderr:\n%s\nwant 2 and %q, no node asked", ttl, code, stderr, want)
		}
	}
}
