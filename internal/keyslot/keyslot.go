// Package keyslot computes where Redis Cluster places keys. A cluster stores a key in one of
// 16384 hash slots, and a script may only touch keys of one slot, so every key a lock uses
// beside its own is named in the lock key's slot (package wire), and the votes of NewCluster
// are hash tags of slots on distinct masters (Votes).
package keyslot

import (
	"fmt"
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

// OneSlot returns an error naming the first two of keys that are in different hash slots, nil
// when all are in one: a script on a Redis Cluster touches one slot.
func OneSlot(keys []string) error {
	if len(keys) < 2 {
		return nil
	}
	first := Of(keys[0])
	for _, k := range keys[1:] {
		if s := Of(k); s != first {
			return fmt.Errorf("keys %q and %q are in hash slots %d and %d of a cluster, where a script touches one slot", keys[0], k, first, s)
		}
	}
	return nil
}
