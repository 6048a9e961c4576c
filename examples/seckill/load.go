package main

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"sync"
)

// A Load is what the load generator saw: like ab -n N -c C against the order endpoint.
type Load struct {
	Requests, Concurrency int
	Accepted              int // 200
	SoldOut               int // 409
	Failed                int // anything else
}

// RunLoad sends n POST /order requests to base, c at a time.
func RunLoad(ctx context.Context, hc *http.Client, base string, n, c int) Load {
	res := Load{Requests: n, Concurrency: c}
	var mu sync.Mutex
	next := make(chan int)
	var wg sync.WaitGroup
	for range c {
		wg.Go(func() {
			for i := range next {
				code := post(ctx, hc, base+"/order?buyer="+url.QueryEscape(buyerName(i)))
				mu.Lock()
				switch code {
				case http.StatusOK:
					res.Accepted++
				case http.StatusConflict:
					res.SoldOut++
				default:
					res.Failed++
				}
				mu.Unlock()
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return res
}

func post(ctx context.Context, hc *http.Client, u string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return 0
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
