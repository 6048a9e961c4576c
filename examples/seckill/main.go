// Command seckill is a flash sale ("秒杀", seckill) in Go: an HTTP service that sells a few
// items from a stock in SQLite (embedded, the default), PostgreSQL or Redis, one lock per
// order, and a load generator shaped like `ab -n500 -c100`. It runs the sale with this
// library's lock and with the naive lock that flash-sale tutorials show, and prints what was
// accepted, what is left and what was oversold.
//
//	go run . -nodes 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003
//	go run . -nodes ... -store postgres -dsn postgres://shop@127.0.0.1:5432/shop
//
// Each order does -work of work between reading and writing the stock, longer than the lock's
// -ttl: the naive lock expires mid-order and lets the next buyer read the same stock; this
// library keeps its lock extended while the order runs, and its orders read and write the stock
// through a fencing guard (redlockfence) with the lock's token, so that a holder paused past
// its lock is refused rather than oversells.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/redlock"
)

// A Config is one sale.
type Config struct {
	Nodes       []redis.UniversalClient // independent masters for this library's lock; the first is the naive lock's node
	Store       Store                   // the stock and the orders, on none of the nodes
	Lock        string                  // "redlock" or "naive"
	Stock       int
	Requests    int
	Concurrency int
	TTL         time.Duration
	Work        time.Duration
}

func (c Config) shop() (*Shop, func(), error) {
	shop := &Shop{Store: c.Store, Item: "sku-123456", Work: c.Work}
	switch c.Lock {
	case "redlock":
		cl, err := redlock.New(c.Nodes, redlock.WithFencing())
		if err != nil {
			return nil, nil, err
		}
		shop.Locker = Redlock{Client: cl, TTL: c.TTL}
		shop.Submissions = &Submissions{Client: cl, Orders: c.Store, Life: 30 * time.Minute}
		return shop, func() { cl.Close() }, nil
	case "naive":
		shop.Locker = Naive{Store: c.Nodes[0], TTL: c.TTL, Poll: 10 * time.Millisecond}
		return shop, func() {}, nil
	}
	return nil, nil, fmt.Errorf("unknown lock %q: want redlock or naive", c.Lock)
}

// Sale restocks, serves the shop on a loopback port, sends it the load and counts the result.
func Sale(ctx context.Context, c Config, out io.Writer) (Report, Load, error) {
	shop, closeShop, err := c.shop()
	if err != nil {
		return Report{}, Load{}, err
	}
	defer closeShop()
	if err := shop.Restock(ctx, c.Stock); err != nil {
		return Report{}, Load{}, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Report{}, Load{}, err
	}
	srv := &http.Server{Handler: shop}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	began := time.Now()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c.Concurrency}}
	load := RunLoad(ctx, hc, "http://"+ln.Addr().String(), c.Requests, c.Concurrency)
	hc.CloseIdleConnections()
	srv.Shutdown(context.WithoutCancel(ctx))
	<-served

	rep, err := shop.Count(ctx, c.Stock)
	if err != nil {
		return Report{}, load, err
	}
	fmt.Fprintf(out, "lock %s, ttl %v, %v of work per order\n", c.Lock, c.TTL, c.Work)
	fmt.Fprintf(out, "  %d requests, %d at a time, in %v: %d accepted, %d sold out, %d failed\n",
		load.Requests, load.Concurrency, time.Since(began).Round(100*time.Millisecond), load.Accepted, load.SoldOut, load.Failed)
	fmt.Fprintf(out, "  stock %d -> %d left, %d orders recorded: oversold %d\n",
		rep.Initial, rep.StockLeft, rep.Orders, rep.Oversold)
	return rep, load, nil
}

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "seckill:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("seckill", flag.ContinueOnError)
	nodes := fs.String("nodes", "", "comma-separated host:port or redis:// URLs of independent Redis masters (required)")
	store := fs.String("store", "sqlite", "where the stock is: sqlite, postgres or redis")
	dsn := fs.String("dsn", "", "sqlite: the database file (default: a new one in a temporary directory); postgres: the DSN (required); redis: the address or URL of a Redis that is none of the nodes (required)")
	lock := fs.String("lock", "both", "redlock, naive, or both one after the other")
	stock := fs.Int("stock", 10, "items for sale")
	n := fs.Int("n", 500, "requests")
	c := fs.Int("c", 100, "concurrent requests")
	ttl := fs.Duration("ttl", time.Second, "the lock's ttl")
	work := fs.Duration("work", 1500*time.Millisecond, "work per order between reading and writing the stock")
	serve := fs.String("serve", "", "only serve the shop (with -lock redlock or naive) on this `address`, for ab or curl")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *nodes == "" {
		return errors.New("-nodes is required")
	}
	var cs []redis.UniversalClient
	for _, a := range strings.Split(*nodes, ",") {
		cl, err := client(a)
		if err != nil {
			return err
		}
		defer cl.Close()
		cs = append(cs, cl)
	}
	if *store == "sqlite" && *dsn == "" {
		dir, err := os.MkdirTemp("", "seckill-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		*dsn = filepath.Join(dir, "seckill.db")
	}
	st, closeStore, err := openStore(ctx, *store, *dsn)
	if err != nil {
		return err
	}
	defer closeStore()
	cfg := Config{Nodes: cs, Store: st, Lock: *lock, Stock: *stock, Requests: *n, Concurrency: *c, TTL: *ttl, Work: *work}

	if *serve != "" {
		return serveShop(ctx, cfg, *serve, out)
	}
	locks := []string{*lock}
	if *lock == "both" {
		locks = []string{"redlock", "naive"}
	}
	for _, l := range locks {
		cfg.Lock = l
		if _, _, err := Sale(ctx, cfg, out); err != nil {
			return err
		}
	}
	return nil
}

func serveShop(ctx context.Context, cfg Config, addr string, out io.Writer) error {
	shop, closeShop, err := cfg.shop()
	if err != nil {
		return err
	}
	defer closeShop()
	if err := shop.Restock(ctx, cfg.Stock); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	srv := &http.Server{Addr: addr, Handler: shop}
	go func() { <-ctx.Done(); srv.Shutdown(context.Background()) }()
	fmt.Fprintf(out, "selling %d items with the %s lock on http://%s/order (POST); Ctrl-C to stop\n", cfg.Stock, cfg.Lock, addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	rep, err := shop.Count(context.WithoutCancel(ctx), cfg.Stock)
	if err == nil {
		fmt.Fprintf(out, "stock %d -> %d left, %d orders recorded: oversold %d\n", rep.Initial, rep.StockLeft, rep.Orders, rep.Oversold)
	}
	return err
}

func client(addr string) (*redis.Client, error) {
	addr = strings.TrimSpace(addr)
	if strings.Contains(addr, "://") {
		o, err := redis.ParseURL(addr)
		if err != nil {
			return nil, errors.New("bad node URL") // the parser's error may quote a password
		}
		return redis.NewClient(o), nil
	}
	return redis.NewClient(&redis.Options{Addr: addr}), nil
}
