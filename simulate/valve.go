package simulate

import (
	"io"
	"net"
	"sync"
)

// A valve is the replication link from a master to its replica: the replica connects to it as
// to its master. What the replica sends passes at once; what the master sends passes while the
// valve is open, and once it holds, waits in the valve until flush lets it through. A replica
// stopped with SIGSTOP would not do: the kernel still queues the stream on its socket, and the
// replica applies it once it runs again, before anyone could promote it.
type valve struct {
	master string
	ln     net.Listener

	mu      sync.Mutex
	holding bool
	held    []byte
	down    net.Conn   // to the replica, nil until it connects
	conns   []net.Conn // every end, closed with the valve
	closed  bool
	wg      sync.WaitGroup
}

func openValve(master string) (*valve, error) {
	v := &valve{master: master}
	ln, err := acceptLoop(&v.wg, v.connect)
	if err != nil {
		return nil, err
	}
	v.ln = ln
	return v, nil
}

func (v *valve) addr() string { return v.ln.Addr().String() }

// connect joins down, the replica's connection, to the master.
func (v *valve) connect(down net.Conn) {
	up, err := net.Dial("tcp", v.master)
	if err != nil {
		down.Close()
		return
	}
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		down.Close()
		up.Close()
		return
	}
	v.down, v.held = down, nil // a new stream: what was held belonged to the old one
	v.conns = append(v.conns, down, up)
	v.mu.Unlock()
	v.wg.Go(func() { io.Copy(up, down); up.Close(); down.Close() })
	v.wg.Go(func() { v.fromMaster(up, down); up.Close(); down.Close() })
}

// fromMaster passes or holds what the master sends to the replica on down.
func (v *valve) fromMaster(up, down net.Conn) {
	b := make([]byte, 32<<10)
	for {
		n, err := up.Read(b)
		v.mu.Lock()
		var werr error
		if v.down == down {
			if v.holding {
				v.held = append(v.held, b[:n]...)
			} else if n > 0 {
				_, werr = down.Write(b[:n])
			}
		}
		v.mu.Unlock()
		if err != nil || werr != nil {
			return
		}
	}
}

// hold keeps what the master sends from now on until flush.
func (v *valve) hold() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.holding = true
}

// flush lets through what the valve holds: the replica catches up.
func (v *valve) flush() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.down == nil || len(v.held) == 0 {
		return nil
	}
	_, err := v.down.Write(v.held)
	v.held = nil
	return err
}

// close cuts the link and drops what it held.
func (v *valve) close() {
	v.ln.Close()
	v.mu.Lock()
	v.closed = true
	conns := v.conns
	v.conns, v.held, v.down = nil, nil, nil
	v.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	v.wg.Wait()
}
