package redlock

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrNotAcquired is returned by Lock and TryLock when the lock was not acquired: another
	// owner holds it, or no quorum of nodes answered yes within the validity. The error also
	// wraps a *NodeError for each node that did not say yes, and ctx.Err() when the context
	// ended the wait.
	ErrNotAcquired = errors.New("redlock: not acquired")

	// ErrNotHeld is returned by Extend and Unlock when so many nodes answered that the key is
	// not this lock's (it expired, was released, or was taken over) that no quorum holds it.
	ErrNotHeld = errors.New("redlock: lock not held")

	// ErrNoQuorum is returned by Extend and Unlock when too few nodes answered to tell: the
	// others failed or did not answer in time. The lock may still be held on the nodes that
	// did not answer until its validity ends. The error wraps a *NodeError for each of them.
	ErrNoQuorum = errors.New("redlock: too few nodes answered; the lock may still be held until its validity ends")

	// ErrClosed is returned by calls on a Client after Close.
	ErrClosed = errors.New("redlock: client closed")

	// errTaken is a node's clear "no" to an acquisition: another owner holds the key.
	errTaken = errors.New("held by another owner")
	// errNotOwner is a node's answer to a release or extend when the key is absent or another's.
	errNotOwner = errors.New("not held under this token")
)

// A NodeError is one node's failure in a call: Node is its index in the nodes given to New or
// NewNodes, and Addr its address when it has a single one.
type NodeError struct {
	Node int
	Addr string
	Err  error
}

func (e *NodeError) Error() string {
	if e.Addr == "" {
		return fmt.Sprintf("redlock: node %d: %v", e.Node, e.Err)
	}
	return fmt.Sprintf("redlock: node %d (%s): %v", e.Node, e.Addr, e.Err)
}

func (e *NodeError) Unwrap() error { return e.Err }

// A replyError is a node's error reply with the secrets of the call (tokens, waiter names)
// taken out: a node that does not know a command echoes its arguments.
type replyError struct{ msg string }

func (e *replyError) Error() string { return e.msg }

// echo starts the part of a Redis error that repeats a command's arguments.
const echo = ", with args beginning with:"

// redact returns err without the arguments a node echoed and without any of secrets. An error
// that carried neither is returned as it is, so that errors.Is still finds what it wraps.
func redact(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	cut := msg
	if i := strings.Index(cut, echo); i >= 0 {
		cut = cut[:i] + " (arguments not shown)"
	}
	for _, s := range secrets {
		if s != "" {
			cut = strings.ReplaceAll(cut, s, "…")
		}
	}
	if cut == msg {
		return err
	}
	return &replyError{msg: cut}
}
