package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/driver"
)

// defaultOwner is the owner redlock exec stores with its lock unless --owner says otherwise:
// this host's name and exec's process id, "web-1:4242", what an operator needs to find the
// holder. Without a host name, the process id alone.
func defaultOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		return fmt.Sprintf("pid %d", os.Getpid())
	}
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// checkOptions returns the error redlock.New would return for opts, before any node is asked:
// New checks every option and sends nothing, so a Client over a node that is never called
// tells what the library refuses without the command line repeating its rules.
func checkOptions(opts ...redlock.Option) error {
	c, err := redlock.NewNodes([]driver.Node{unused{}}, opts...)
	if err != nil {
		return err
	}
	return c.Close()
}

// unused is a redlock.Node that is never called (see checkOptions).
type unused struct{}

var _ driver.Node = unused{}

var errUnused = errors.New("redlock: this node is never asked")

func (unused) Eval(context.Context, driver.Script, []string, []string) (any, error) {
	return nil, errUnused
}

func (unused) SetNX(context.Context, string, string, time.Duration) (bool, error) {
	return false, errUnused
}

func (unused) Listen(context.Context, []string, func(), func(string, string)) error {
	return errUnused
}
