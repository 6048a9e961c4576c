package main

import "testing"

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
