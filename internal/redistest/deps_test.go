package redistest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// deps runs make test's set-up script, .ci/deps, with args on a machine that has only what
// it is given: a PATH holding just the programs of fakes (name to shell script), and a ROOT
// holding just the files of files (empty files at these paths below it), where the script
// looks for libfaketime and PostgreSQL. It returns the exit status and the output, stdout
// then stderr.
func deps(t *testing.T, fakes map[string]string, files []string, args ...string) (int, string) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	bin, root := t.TempDir(), t.TempDir()
	for name, script := range fakes {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bash, append([]string{"../../.ci/deps"}, args...)...)
	cmd.Env = []string{"PATH=" + bin, "ROOT=" + root}
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		out = append(out, ee.Stderr...)
	} else if err != nil {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

const want = "redis-server faketime postgresql"

// Not root: it stops at once with the one command that installs everything missing.
func TestDepsNotRoot(t *testing.T) {
	code, out := deps(t, map[string]string{"id": "echo 1000", "apt-get": "exit 0"}, nil)
	if code != 1 || !strings.Contains(out, "\n  sudo apt-get install -y "+want+"\n") {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
}

// Without apt-get it names the same command, and says where it applies.
func TestDepsNoAptGet(t *testing.T) {
	code, out := deps(t, nil, nil)
	if code != 1 || !strings.Contains(out, "sudo apt-get install -y "+want+" (on Debian or Ubuntu;") {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
}

// As root where apt-get is, it installs the packages; when they are still missing afterwards
// (this apt-get installs nothing), it fails saying so. With -n it only says what it would run.
func TestDepsRoot(t *testing.T) {
	log := filepath.Join(t.TempDir(), "apt-get.log")
	fakes := map[string]string{"id": "echo 0", "apt-get": `echo "$@" >> ` + log}
	code, out := deps(t, fakes, nil, "-n")
	if code != 1 || !strings.Contains(out, "it would run: apt-get update && apt-get install -y "+want) {
		t.Fatalf("-n: exit %d, output:\n%s", code, out)
	}
	if _, err := os.Stat(log); err == nil {
		t.Fatal("-n ran apt-get")
	}
	code, out = deps(t, fakes, nil)
	calls, err := os.ReadFile(log)
	if err != nil {
		t.Fatalf("apt-get did not run (%v): exit %d, output:\n%s", err, code, out)
	}
	if string(calls) != "update\ninstall -y "+want+"\n" {
		t.Fatalf("apt-get ran with:\n%s", calls)
	}
	if code != 1 || !strings.Contains(out, "still missing after apt-get install: "+want) {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
}

// With everything there it says nothing and succeeds. PostgreSQL counts as there when its
// programs are in Debian's directory, off PATH; only what is missing is named.
func TestDepsFound(t *testing.T) {
	there := map[string]string{"redis-server": "", "faketime": "", "id": "echo 1000"}
	files := []string{"usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1", "usr/lib/postgresql/15/bin/pg_ctl"}
	if code, out := deps(t, there, files); code != 0 || out != "" {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
	if code, out := deps(t, there, files[:1]); code != 1 || !strings.Contains(out, "sudo apt-get install -y postgresql (") {
		t.Fatalf("without PostgreSQL: exit %d, output:\n%s", code, out)
	}
	if code, out := deps(t, map[string]string{"redis-server": "", "id": "echo 1000"}, files); code != 1 ||
		!strings.Contains(out, "sudo apt-get install -y faketime (") {
		t.Fatalf("without the faketime program: exit %d, output:\n%s", code, out)
	}
}
