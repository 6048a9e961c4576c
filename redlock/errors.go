package redlock

import (
	"errors"
	"fmt"
)

var (
	// ErrNotAcquired is returned by Lock and TryLock when the lock was not acquired: another
	// owner holds it, or no quorum of nodes answered yes within the validity. The error also
	// wraps a *NodeError for each node that did not say yes, and ctx.Err() when the context
	// ended the wait.
	ErrNotAcquired = errors.New("redlock: not acquired")

	// ErrNotHeld is returned by Extend and Unlock when a quorum of nodes no longer holds the
	// lock under this acquisition's token: it expired, was released, or was never ours.
	ErrNotHeld = errors.New("redlock: lock not held")

	// ErrClosed is returned by calls on a Client after Close.
	ErrClosed = errors.New("redlock: client closed")

	// errTaken is a node's clear "no": the key exists with another token.
	errTaken = errors.New("held by another owner")
	// errNotOwner is a node's answer to a release or extend when the key is absent or another's.
	errNotOwner = errors.New("not held under this token")
)

// A NodeError is one node's failure in a call: Node is its index in the slice given to New and
// Addr its address when the client has a single one.
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
