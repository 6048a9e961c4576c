// Package keyslot names keys the way Redis Cluster places them. A cluster stores a key in one
// of 16384 hash slots, and a script may only touch keys of one slot, so every key a lock uses
// beside its own (the waiters' queue, the fencing counter, the keys of the other primitives) is
// named by Companion, in the lock key's slot.
package keyslot

import (
	"strconv"
	"strings"
	"sync"
)

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// Hashed returns the part of key that Redis Cluster hashes: when key has a "{" and, after the
// first "{", a "}" with at least one character between them, the text between that "{" and the
// first "}" after it; otherwise the whole key.
func Hashed(key string) string {
	if s := strings.IndexByte(key, '{'); s >= 0 {
		if e := strings.IndexByte(key[s+1:], '}'); e > 0 {
			return key[s+1 : s+1+e]
		}
	}
	return key
}

// Of returns the hash slot of key: CRC16 (XMODEM) of its hashed part, modulo 16384.
func Of(key string) int {
	var crc uint16
	for _, b := range []byte(Hashed(key)) {
		crc ^= uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc % Slots)
}

// Companion names the key of the given kind ("queue", "fence", ...) that belongs to the lock
// key stored (with the Client's prefix), so that both live in one hash slot:
//
//   - a key whose whole text is hashed and that has no "}": kind:{key}, e.g. "queue:{orders}";
//   - a key with a hash tag: kind:{tag}key, e.g. "queue:{user:7}{user:7}:profile";
//   - a key whose whole text is hashed but that has a "}" ("a}b", "x{}y{z}"), which could not
//     stand between braces: kind:{t}key, t a brace-free tag of the same slot, e.g. "queue:{4w2}a}b".
//
// The full key is in every name, so that no two lock keys share a companion.
func Companion(kind, stored string) string {
	h := Hashed(stored)
	switch {
	case h == stored && !strings.Contains(stored, "}"):
		return kind + ":{" + stored + "}"
	case h == stored:
		h = Tag(Of(stored))
	}
	return kind + ":{" + h + "}" + stored
}

var (
	tagsOnce sync.Once
	tags     *[Slots]string
)

// Tag returns the first string of the sequence "0", "1", ..., "z", "10", ... (base 36) that
// hashes to slot s, for s in [0, Slots): short, free of braces, and the same in every process.
func Tag(s int) string {
	tagsOnce.Do(func() {
		tags = new([Slots]string)
		for n, left := uint64(0), Slots; left > 0; n++ {
			t := strconv.FormatUint(n, 36)
			if i := Of(t); tags[i] == "" {
				tags[i] = t
				left--
			}
		}
	})
	return tags[s]
}
