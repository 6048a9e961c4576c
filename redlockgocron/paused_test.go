package redlockgocron_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlockgocron"
)

// pausedLeaderEnv makes the test binary the scheduler of TestElectorStoppedPastItsTerm: it
// leads over the nodes whose addresses the variable holds, says so, and answers IsLeader on
// its standard output the moment it is continued after a SIGSTOP.
const pausedLeaderEnv = "REDLOCKGOCRON_PAUSED_LEADER"

// pausedLeaderTTL is that scheduler's term: 1 s.
const pausedLeaderTTL = time.Second

// pausedLeader is the scheduler's main, when the test binary runs as one; it never returns.
func pausedLeader(addrs string) {
	var nodes []redis.UniversalClient
	for _, a := range strings.Split(addrs, ",") {
		nodes = append(nodes, client(a))
	}
	c, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	e, err := redlockgocron.NewElector(context.Background(), c, "scheduler", "child", pausedLeaderTTL)
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	for e.IsLeader(context.Background()) != nil {
		time.Sleep(time.Millisecond)
	}
	fmt.Println("leader")
	<-cont
	fmt.Println("continued:", e.IsLeader(context.Background()))
	os.Exit(0)
}

// A scheduler whose process is stopped (SIGSTOP) past its term's end, while another takes the
// lead, does not say it leads when it continues (SIGCONT): the first IsLeader it answers, at
// once, is an error. Its timers have not run yet then. Three rounds, each with a new child.
func TestElectorStoppedPastItsTerm(t *testing.T) {
	addrs := servers(t, 3)
	for round := range 3 {
		t.Run(fmt.Sprint(round), func(t *testing.T) { stopPastTerm(t, addrs) })
	}
}

func stopPastTerm(t *testing.T, addrs []string) {
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), pausedLeaderEnv+"="+strings.Join(addrs, ","))
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	lines := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	if line := next(t, lines); line != "leader" {
		t.Fatalf("the child said %q, want leader", line)
	}
	child.Process.Signal(syscall.SIGSTOP)
	defer child.Process.Signal(syscall.SIGCONT)

	// Another scheduler takes the lead in the stopped one's place; it resigns at the end.
	var nodes []redis.UniversalClient
	for _, a := range addrs {
		rc := client(a)
		defer rc.Close()
		nodes = append(nodes, rc)
	}
	c, err := redlock.New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := elector(t, ctx, c, "parent", pausedLeaderTTL)
	within(t, 3*pausedLeaderTTL+2*time.Second, "a leader in the stopped one's place", func() bool {
		return e.IsLeader(ctx) == nil
	})

	child.Process.Signal(syscall.SIGCONT)
	if line := next(t, lines); !strings.Contains(line, redlockgocron.ErrNotLeader.Error()) {
		t.Fatalf("after its SIGCONT, while another scheduler leads, the stopped leader said %q", line)
	}
	cancel()
	<-e.Done()
}

// next returns the next line of lines, failing t after 10 s.
func next(t *testing.T, lines <-chan string) string {
	t.Helper()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatal("the child ended")
		}
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("nothing from the child within 10s")
	}
	return ""
}
