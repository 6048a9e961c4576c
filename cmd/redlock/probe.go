package main

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// authFailure reports whether err is a node refusing the credentials or the commands, or a TLS
// handshake failing (the node's certificate not trusted, ours refused, or the server not
// speaking TLS at all): failures that retrying does not cure.
func authFailure(err error) bool {
	if err == nil {
		return false
	}
	var verr *tls.CertificateVerificationError
	if errors.As(err, &verr) || errors.Is(err, errPlainText) {
		return true
	}
	msg := err.Error()
	for _, p := range []string{"WRONGPASS", "NOAUTH", "NOPERM", "invalid password", "invalid username-password", "x509: ", "tls: "} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// ping asks every node for PING at once, each bounded by timeout, and returns each one's error,
// explained (see explain).
func ping(ctx context.Context, cs []redis.UniversalClient, nodes []node, timeout time.Duration) []error {
	errs := make([]error, len(cs))
	done := make(chan struct{})
	for i, c := range cs {
		go func() {
			defer func() { done <- struct{}{} }()
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			errs[i] = nodes[i].explain(ctx, c.Ping(pctx).Err(), timeout)
		}()
	}
	for range cs {
		<-done
	}
	return errs
}

// errPlainText is a TLS node whose server answers in plain text: no handshake can succeed.
var errPlainText = errors.New("TLS handshake failed: the server answers in plain text, not TLS (use redis:// for it, or the server's TLS port)")

// explain returns err, node n's failure, unless n uses TLS and its server answers a plain-text
// PING: then errPlainText. A TLS handshake with such a server mostly waits for an answer
// until the call times out, which tells nothing. timeout bounds the extra PING.
func (n node) explain(ctx context.Context, err error, timeout time.Duration) error {
	var addr string
	switch {
	case n.opts != nil && n.opts.TLSConfig != nil:
		addr = n.opts.Addr
	case n.cluster != nil && n.cluster.TLSConfig != nil && len(n.cluster.Addrs) > 0:
		addr = n.cluster.Addrs[0]
	}
	var verr *tls.CertificateVerificationError
	var rerr redis.Error // the server answered over TLS
	if err == nil || addr == "" || errors.As(err, &verr) || errors.As(err, &rerr) {
		return err
	}
	if plainText(ctx, addr, timeout) {
		return errPlainText
	}
	return err
}

// plainText reports whether the server at addr answers PING in plain text, as Redis without
// TLS does (+PONG, or -NOAUTH and the like).
func plainText(ctx context.Context, addr string, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	var b [1]byte
	_, err = io.ReadFull(conn, b[:])
	return err == nil && (b[0] == '+' || b[0] == '-')
}
