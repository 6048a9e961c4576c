// Package nodecall holds what every kind of node (go-redis, rueidis, valkey-go) needs the same
// way: a call that returns by its context's end whatever the client does, and a reply with its
// maps flattened, as doctor.Commander returns replies.
package nodecall

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
)

// ByDeadline runs call and returns by ctx's end whatever call does: a client may not end a
// call (the making of a connection, a read from a stopped server) by its context. The call then
// goes on alone until its client ends it, and its result is dropped. A ctx that never ends
// runs call in the caller's goroutine.
func ByDeadline[T any](ctx context.Context, call func(context.Context) (T, error)) (T, error) {
	if ctx.Done() == nil {
		return call(ctx)
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := call(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// Flat returns a reply with every map in it (RESP3) turned into a []any of its keys and values
// in turn, keys in order.
func Flat(v any) any {
	switch v := v.(type) {
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = Flat(e)
		}
		return out
	case map[any]any:
		keys := slices.SortedFunc(maps.Keys(v), func(a, b any) int { return cmp.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
		out := make([]any, 0, 2*len(v))
		for _, k := range keys {
			out = append(out, Flat(k), Flat(v[k]))
		}
		return out
	case map[string]any:
		out := make([]any, 0, 2*len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			out = append(out, k, Flat(v[k]))
		}
		return out
	}
	return v
}
