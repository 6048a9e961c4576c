package nodecall

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

// Maps in replies (RESP3), of either key type, come out as lists of keys and values, keys in
// order, however deep.
func TestFlat(t *testing.T) {
	got := Flat([]any{map[any]any{"b": int64(2), "a": []any{map[string]any{"y": "1", "x": nil}}}, "s"})
	if want := []any{[]any{"a", []any{[]any{"x", nil, "y", "1"}}, "b", int64(2)}, "s"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Flat = %v, want %v", got, want)
	}
	in := []any{"a", map[string]any{"z": int64(1), "b": []any{map[any]any{"y": "2", "x": "1"}}}}
	want := []any{"a", []any{"b", []any{[]any{"x", "1", "y", "2"}}, "z", int64(1)}}
	if got := Flat(in); !reflect.DeepEqual(got, want) {
		t.Errorf("Flat(%v) = %v, want %v", in, got, want)
	}
}

// A call that outlives its context is left to end alone: ByDeadline returns at the deadline.
func TestByDeadlineReturnsAtTheDeadline(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := ByDeadline(ctx, func(context.Context) (int, error) { <-release; return 1, nil })
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %v, want the deadline's", err, time.Since(start))
	}
	v, err := ByDeadline(context.Background(), func(context.Context) (int, error) { return 7, nil })
	if v != 7 || err != nil {
		t.Fatalf("a call within its context: %v, %v", v, err)
	}
}
