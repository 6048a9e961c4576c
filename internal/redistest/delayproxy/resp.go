package delayproxy

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strconv"
)

// A loss loses the RESP values of one direction of a connection, as a Fault with Drop says:
// each value with probability p, and everything after the first one lost. A direction whose
// bytes are not RESP (the framer cannot tell its values apart) is passed on whole from there.
type loss struct {
	p       float64
	rng     *rand.Rand
	framer  respFramer
	stalled bool // a value was lost: nothing more is delivered
	broken  bool // the bytes were not RESP: everything is delivered
}

// keep returns the part of b to deliver: all of it, or the values before the one lost (a
// prefix of b, sharing its memory).
func (l *loss) keep(b []byte) []byte {
	switch {
	case l.stalled:
		return b[:0]
	case l.broken:
		return b
	}
	for i := 0; i < len(b); {
		starts := !l.framer.inValue
		n, err := l.framer.step(b[i:])
		if err != nil {
			l.broken = true
			return b
		}
		if starts && l.rng.Float64() < l.p { // one draw a value, as it begins
			l.stalled = true
			return b[:i]
		}
		i += n
	}
	return b
}

// A respFramer finds where the values of a RESP2 or RESP3 stream end, fed the stream in
// pieces cut anywhere. It reads each header line and counts the elements of aggregates and
// the bytes of blobs, without keeping any value.
type respFramer struct {
	inValue bool   // a value began and has not ended
	line    []byte // the header line read so far
	skip    int    // bytes of a blob, with its CRLF, still to come
	open    []int  // elements still to come in each aggregate open, the innermost last
}

const maxRESPLine = 64 << 10 // longer header lines are taken for a stream that is not RESP

var errNotRESP = errors.New("bench: not a RESP stream")

// step consumes b up to the end of the value under way (or of one starting at b[0]), or all
// of b when the value goes on beyond it, and returns how many bytes it took: at least one.
// inValue tells afterwards whether the value ended there.
func (f *respFramer) step(b []byte) (int, error) {
	f.inValue = true
	for i := 0; i < len(b); {
		if f.skip > 0 {
			k := min(f.skip, len(b)-i)
			f.skip -= k
			i += k
			if f.skip == 0 && f.element() {
				return i, nil
			}
			continue
		}
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			if len(f.line)+len(b)-i > maxRESPLine {
				return i, errNotRESP
			}
			f.line = append(f.line, b[i:]...)
			return len(b), nil
		}
		f.line = append(f.line, b[i:i+j+1]...)
		i += j + 1
		complete, err := f.header()
		f.line = f.line[:0]
		if err != nil {
			return i, err
		}
		if complete && f.element() {
			return i, nil
		}
	}
	return len(b), nil
}

// header reads the line in f.line, and reports whether it is a whole element; if not, it
// begins a blob (f.skip) or an aggregate (f.open).
func (f *respFramer) header() (bool, error) {
	l := f.line
	if len(l) < 3 || l[len(l)-2] != '\r' {
		return false, errNotRESP
	}
	kind, body := l[0], string(l[1:len(l)-2])
	switch kind {
	case '+', '-', ':', '_', ',', '#', '(': // simple string, error, integer, null, double, boolean, big number
		return true, nil
	}
	n, err := strconv.Atoi(body) // a streamed length ("?") is an error: Redis sends none
	if err != nil || n < -1 {
		return false, errNotRESP
	}
	switch kind {
	case '$', '!', '=': // blob string, blob error, verbatim string
		if n < 0 {
			return true, nil // RESP2's null bulk string
		}
		f.skip = n + 2
		return false, nil
	case '*', '~', '>': // array, set, push
	case '%': // map: a key and a value an entry
		n *= 2
	case '|': // attribute: its entries, then the value it is about, one element with it
		n = 2*n + 1
	default:
		return false, errNotRESP
	}
	if n <= 0 {
		return true, nil // empty, or RESP2's null array
	}
	f.open = append(f.open, n)
	return false, nil
}

// element counts one whole element in the aggregates open, closing those it completes, and
// reports whether the value ended with it.
func (f *respFramer) element() bool {
	for len(f.open) > 0 {
		top := len(f.open) - 1
		if f.open[top]--; f.open[top] > 0 {
			return false
		}
		f.open = f.open[:top]
	}
	f.inValue = false
	return true
}
