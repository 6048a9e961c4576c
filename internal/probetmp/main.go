package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/quorumlock/redlock/redlock"
	"github.com/redis/go-redis/v9"
)

func main() {
	var cs []*redlock.Client
	for range 3 {
		c, err := redlock.New([]redis.UniversalClient{redis.NewClient(&redis.Options{Addr: "127.0.0.1:7001"}), redis.NewClient(&redis.Options{Addr: "127.0.0.1:7002"}), redis.NewClient(&redis.Options{Addr: "127.0.0.1:7003"})})
		if err != nil {
			panic(err)
		}
		cs = append(cs, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	n := make([]int, len(cs))
	for i, c := range cs {
		wg.Go(func() {
			for ctx.Err() == nil {
				l, err := c.Lock(ctx, "k", 8*time.Second)
				if err != nil {
					continue
				}
				n[i]++
				l.Unlock(context.Background())
			}
		})
	}
	wg.Wait()
	fmt.Println(n)
}
