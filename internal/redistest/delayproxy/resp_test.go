package delayproxy

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// respValues are whole RESP2 and RESP3 values of every kind, some nested, some with CRLF or
// a type byte inside a blob.
var respValues = []string{
	"+OK\r\n",
	"-ERR wrong\r\n",
	":1\r\n",
	"$3\r\nfoo\r\n",
	"$-1\r\n",
	"$0\r\n\r\n",
	"$6\r\n*1\r\n:1\r\n",
	"*2\r\n$3\r\nfoo\r\n:1\r\n",
	"*-1\r\n",
	"*0\r\n",
	"*2\r\n*1\r\n:1\r\n*0\r\n",
	"_\r\n",
	"#t\r\n",
	",1.5\r\n",
	"(12345678901234567890\r\n",
	"%1\r\n+a\r\n*1\r\n:1\r\n",
	"~2\r\n:1\r\n:2\r\n",
	">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n",
	"|1\r\n+ttl\r\n:3\r\n:5\r\n",
	"*2\r\n|1\r\n+a\r\n:1\r\n:2\r\n:3\r\n",
	"=15\r\ntxt:Some string\r\n",
	"!3\r\nerr\r\n",
}

// The framer finds the end of every value wherever the stream is cut: in one piece, in
// pieces of every size from 1 byte up, and in random pieces.
func TestRESPFramer(t *testing.T) {
	stream := strings.Join(respValues, "")
	var want []int // the offsets where values end
	end := 0
	for _, v := range respValues {
		end += len(v)
		want = append(want, end)
	}
	ends := func(cuts []int) []int {
		var f respFramer
		var got []int
		at := 0
		for _, cut := range cuts {
			piece := []byte(stream[at:cut])
			for i := 0; i < len(piece); {
				n, err := f.step(piece[i:])
				if err != nil {
					t.Fatalf("cuts %v: at %d: %v", cuts, at+i, err)
				}
				if n < 1 {
					t.Fatalf("cuts %v: step took no byte at %d", cuts, at+i)
				}
				i += n
				if !f.inValue {
					got = append(got, at+i)
				}
			}
			at = cut
		}
		return got
	}
	check := func(name string, cuts []int) {
		t.Helper()
		if got := ends(cuts); !slices.Equal(got, want) {
			t.Fatalf("%s: values end at %v, want %v", name, got, want)
		}
	}
	check("whole", []int{len(stream)})
	for size := 1; size <= 16; size++ {
		var cuts []int
		for c := size; c < len(stream); c += size {
			cuts = append(cuts, c)
		}
		check("pieces of "+strconv.Itoa(size), append(cuts, len(stream)))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100 {
		var cuts []int
		for c := rng.IntN(8) + 1; c < len(stream); c += rng.IntN(8) + 1 {
			cuts = append(cuts, c)
		}
		check("random pieces", append(cuts, len(stream)))
	}
}

func TestRESPFramerRejects(t *testing.T) {
	for _, in := range []string{"hello\r\n", "$x\r\n", "*-2\r\n", "$?\r\n", "+OK\n", "\r\n"} {
		var f respFramer
		if _, err := f.step([]byte(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// A loss delivers whole values and nothing after the first one it loses, wherever the stream
// is cut; with drop 0 it loses nothing, with drop 1 everything, and bytes that are not RESP
// pass untouched.
func TestLoss(t *testing.T) {
	stream := []byte(strings.Repeat(strings.Join(respValues, ""), 5))
	prefixes := map[int]bool{0: true} // the lengths of the whole-value prefixes of stream
	at := 0
	for range 5 {
		for _, v := range respValues {
			at += len(v)
			prefixes[at] = true
		}
	}
	run := func(p float64, seed uint64, in []byte) []byte {
		l := &loss{p: p, rng: rand.New(rand.NewPCG(seed, 0))}
		rng := rand.New(rand.NewPCG(seed, 1))
		var out []byte
		for len(in) > 0 {
			n := min(rng.IntN(12)+1, len(in))
			out = append(out, l.keep(in[:n])...)
			in = in[n:]
		}
		return out
	}
	if got := run(0, 1, stream); !bytes.Equal(got, stream) {
		t.Fatalf("drop 0 delivered %d of %d bytes", len(got), len(stream))
	}
	if got := run(1, 1, stream); len(got) != 0 {
		t.Fatalf("drop 1 delivered %q", got)
	}
	lost := 0
	for seed := range uint64(50) {
		got := run(0.05, seed, stream)
		if !bytes.Equal(got, stream[:len(got)]) || !prefixes[len(got)] {
			t.Fatalf("seed %d: delivered %d bytes, not a run of whole values", seed, len(got))
		}
		if len(got) < len(stream) {
			lost++
		}
	}
	if lost == 0 {
		t.Fatal("drop 0.05 lost nothing from 110 values, 50 times") // fixed seeds: never flaky
	}
	notRESP := []byte("not RESP\r\nat all\r\n")
	l := &loss{p: 1, rng: rand.New(rand.NewPCG(1, 1))}
	if got := l.keep(notRESP); !bytes.Equal(got, notRESP) || !l.broken {
		t.Fatalf("not RESP: delivered %q", got)
	}
}

func TestFaultDelay(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	if d := (Fault{MinDelay: 5 * time.Millisecond, MaxDelay: 5 * time.Millisecond}).delay(rng); d != 5*time.Millisecond {
		t.Fatalf("fixed delay drew %v", d)
	}
	f := Fault{MinDelay: 20 * time.Millisecond, MaxDelay: 80 * time.Millisecond}
	seen := map[time.Duration]bool{}
	for range 1000 {
		d := f.delay(rng)
		if d < f.MinDelay || d > f.MaxDelay {
			t.Fatalf("drew %v, outside [%v, %v]", d, f.MinDelay, f.MaxDelay)
		}
		seen[d] = true
	}
	if len(seen) < 100 {
		t.Fatalf("1000 draws gave %d distinct delays", len(seen))
	}
}
