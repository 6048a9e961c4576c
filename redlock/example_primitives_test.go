package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/redlock/redlock"
)

// Readers share the lock.
func ExampleRWMutex_RLock() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	doc, err := locker.RWMutex("doc:7")
	if err != nil {
		fmt.Println(err)
		return
	}
	r1, err := doc.RLock(ctx, 10*time.Second)
	fmt.Println("first reader:", err)
	r2, err := doc.RLock(ctx, 10*time.Second)
	fmt.Println("second reader, at once:", err)
	r1.Unlock(ctx)
	r2.Unlock(ctx)
	// Output:
	// first reader: <nil>
	// second reader, at once: <nil>
}

// TryRLock is refused while a writer holds the lock.
func ExampleRWMutex_TryRLock() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	doc, err := locker.RWMutex("doc:7")
	if err != nil {
		fmt.Println(err)
		return
	}
	w, err := doc.Lock(ctx, 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = doc.TryRLock(ctx, 10*time.Second)
	fmt.Println("while a writer holds it:", errors.Is(err, redlock.ErrNotAcquired))
	w.Unlock(ctx)
	r, err := doc.TryRLock(ctx, 10*time.Second)
	fmt.Println("after:", err)
	r.Unlock(ctx)
	// Output:
	// while a writer holds it: true
	// after: <nil>
}

// A writer waits until the readers are gone.
func ExampleRWMutex_Lock() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	doc, err := locker.RWMutex("doc:7")
	if err != nil {
		fmt.Println(err)
		return
	}
	reader, err := doc.RLock(ctx, 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	wrote := make(chan *redlock.Lock)
	go func() {
		w, err := doc.Lock(ctx, 10*time.Second)
		if err != nil {
			fmt.Println(err)
		}
		wrote <- w
	}()
	fmt.Println("the reader releases:", reader.Unlock(ctx))
	w := <-wrote
	fmt.Println("the writer holds it:", w.Err() == nil)
	w.Unlock(ctx)
	// Output:
	// the reader releases: <nil>
	// the writer holds it: true
}

// TryLock makes one attempt to take the lock for writing.
func ExampleRWMutex_TryLock() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	doc, err := locker.RWMutex("doc:7")
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := doc.RLock(ctx, 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = doc.TryLock(ctx, 10*time.Second)
	fmt.Println("while a reader holds it:", errors.Is(err, redlock.ErrNotAcquired))
	r.Unlock(ctx)
	w, err := doc.TryLock(ctx, 10*time.Second)
	fmt.Println("after:", err)
	w.Unlock(ctx)
	// Output:
	// while a reader holds it: true
	// after: <nil>
}

// Do writes alone: no reader gets in while fn runs.
func ExampleRWMutex_Do() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	doc, err := locker.RWMutex("doc:7")
	if err != nil {
		fmt.Println(err)
		return
	}
	err = doc.Do(ctx, 10*time.Second, func(context.Context) error {
		// Another reader: its context does not carry the lock, as fn's does.
		_, err := doc.TryRLock(ctx, 10*time.Second)
		fmt.Println("a reader while writing:", errors.Is(err, redlock.ErrNotAcquired))
		return nil
	})
	fmt.Println("done:", err)
	// Output:
	// a reader while writing: true
	// done: <nil>
}

// RDo reads beside other readers; writers wait.
func ExampleRWMutex_RDo() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	doc, err := locker.RWMutex("doc:7")
	if err != nil {
		fmt.Println(err)
		return
	}
	err = doc.RDo(ctx, 10*time.Second, func(context.Context) error {
		// Other callers: their context does not carry the lock, as fn's does.
		other, err := doc.TryRLock(ctx, 10*time.Second)
		fmt.Println("another reader:", err)
		other.Unlock(ctx)
		_, err = doc.TryLock(ctx, 10*time.Second)
		fmt.Println("a writer:", errors.Is(err, redlock.ErrNotAcquired))
		return nil
	})
	fmt.Println("done:", err)
	// Output:
	// another reader: <nil>
	// a writer: true
	// done: <nil>
}

// Lock waits for a permit: a release hands it on.
func ExampleSemaphore_Lock() {
	nodes, stop := masters(5)
	defer stop()
	// A holder needs 4 of the 5 nodes here: a generous node timeout keeps a busy machine
	// (under -race) from costing one of them.
	locker, err := redlock.New(nodes, redlock.WithNodeTimeout(time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	exports, err := locker.Semaphore("exports", 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	first, err := exports.Lock(ctx, 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	second, err := exports.Lock(ctx, 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	third := make(chan *redlock.Lock)
	go func() {
		l, err := exports.Lock(ctx, 10*time.Second) // waits: both permits are taken
		if err != nil {
			fmt.Println(err)
		}
		third <- l
	}()
	fmt.Println("first releases:", first.Unlock(ctx))
	l := <-third
	fmt.Println("the third holds a permit:", l.Err() == nil)
	second.Unlock(ctx)
	l.Unlock(ctx)
	// Output:
	// first releases: <nil>
	// the third holds a permit: true
}

// TryLock makes one attempt to take a permit.
func ExampleSemaphore_TryLock() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	single, err := locker.Semaphore("backup", 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	held, err := single.TryLock(ctx, 10*time.Second)
	fmt.Println("first:", err)
	_, err = single.TryLock(ctx, 10*time.Second)
	fmt.Println("second:", errors.Is(err, redlock.ErrNotAcquired))
	held.Unlock(ctx)
	// Output:
	// first: <nil>
	// second: true
}

// Do holds a permit while fn runs, as Client.Do holds a lock.
func ExampleSemaphore_Do() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	exports, err := locker.Semaphore("exports", 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	err = exports.Do(ctx, 10*time.Second, func(ctx context.Context) error {
		fmt.Println("exporting")
		return nil
	})
	fmt.Println("done:", err)
	// Output:
	// exporting
	// done: <nil>
}

// A semaphore's holder needs more nodes than a majority once it has 2 permits or more: the
// price is fewer nodes that may be down.
func ExampleSemaphore_Quorum() {
	five, stop := masters(5)
	defer stop()
	locker, err := redlock.New(five)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	for permits := 1; permits <= 4; permits++ {
		s, err := locker.Semaphore("exports", permits)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("5 nodes, %d permits: a holder needs %d nodes\n", permits, s.Quorum())
	}
	nine, stop9 := masters(9)
	defer stop9()
	bigger, err := redlock.New(nine)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer bigger.Close()
	s, err := bigger.Semaphore("exports", 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("9 nodes, 2 permits: a holder needs %d nodes\n", s.Quorum())
	// Output:
	// 5 nodes, 1 permits: a holder needs 3 nodes
	// 5 nodes, 2 permits: a holder needs 4 nodes
	// 5 nodes, 3 permits: a holder needs 4 nodes
	// 5 nodes, 4 permits: a holder needs 5 nodes
	// 9 nodes, 2 permits: a holder needs 7 nodes
}
