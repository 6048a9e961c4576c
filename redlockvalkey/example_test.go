package redlockvalkey_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/valkey-io/valkey-go"

	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/driver"
	"github.com/quorumlock/redlock/redlockvalkey"
)

// A Client over three Redis masters, each reached through a valkey-go client of its own. Here
// the masters are in-memory miniredis servers, which know no client-side caching: valkey-go is
// told so (DisableCache). Against real servers, leave the cache option as you use it.
func Example() {
	ctx := context.Background()
	var nodes []driver.Node
	for range 3 {
		m := miniredis.NewMiniRedis()
		if err := m.Start(); err != nil {
			log.Fatal(err)
		}
		defer m.Close()
		client, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{m.Addr()}, DisableCache: true})
		if err != nil {
			log.Fatal(err)
		}
		defer client.Close()
		nodes = append(nodes, redlockvalkey.Node(client))
	}
	c, err := redlock.NewNodes(nodes)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	l, err := c.Lock(ctx, "report:2026-11", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("locked", l.Key())
	_, err = c.TryLock(ctx, "report:2026-11", 10*time.Second)
	fmt.Println("refused while held:", errors.Is(err, redlock.ErrNotAcquired))
	if err := l.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("unlocked")
	// Output:
	// locked report:2026-11
	// refused while held: true
	// unlocked
}
