package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/redlock/redlock"
)

// A nil *Lock or *Term, what a failed acquisition or campaign returns, holds nothing and never
// panics: code that uses one before checking the error gets an error, not a crash.
func TestNilLockAndTermNeverPanic(t *testing.T) {
	ctx := context.Background()
	var l *redlock.Lock
	if l.Key() != "" || l.Keys() != nil || l.Token() != "" || l.Fence() != 0 || !l.Until().IsZero() {
		t.Fatal("a nil Lock's accessors do not return zero values")
	}
	if l.Context(ctx) != ctx {
		t.Fatal("a nil Lock's Context is not ctx")
	}
	select {
	case <-l.Lost():
	default:
		t.Fatal("a nil Lock's Lost is not closed")
	}
	for name, err := range map[string]error{
		"Err": l.Err(), "Unlock": l.Unlock(ctx), "Extend": l.Extend(ctx, time.Second),
		"KeepAlive": l.KeepAlive(time.Second), "Orphan": l.Orphan(ctx),
	} {
		if !errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("a nil Lock's %s: %v, want ErrNotHeld", name, err)
		}
	}
	var term *redlock.Term
	if term.Value() != "" || term.Term() != 0 || !term.Until().IsZero() {
		t.Fatal("a nil Term's accessors do not return zero values")
	}
	select {
	case <-term.Lost():
	default:
		t.Fatal("a nil Term's Lost is not closed")
	}
	if err := term.Resign(ctx); !errors.Is(err, redlock.ErrNotHeld) {
		t.Errorf("a nil Term's Resign: %v, want ErrNotHeld", err)
	}
	if err := term.Proclaim(ctx, "x"); !errors.Is(err, redlock.ErrNotHeld) {
		t.Errorf("a nil Term's Proclaim: %v, want ErrNotHeld", err)
	}
}
