package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
)

// tlsFiles writes a CA certificate and a server certificate for 127.0.0.1 signed by it, with
// the server's key, as PEM files in dir.
func tlsFiles(t *testing.T, dir string) (ca, cert, key string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "redlock test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("server.pem", "CERTIFICATE", srvDER), write("server.key", "EC PRIVATE KEY", keyDER)
}

func freeLoopbackPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// rediss:// verifies the server's certificate: a node whose CA is not trusted is refused at
// once, naming it; with --cacert the same nodes work; skip_verify=true in the URL turns the check
// off.
func TestExecTLS(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := tlsFiles(t, dir)
	var urls []string
	for range 3 {
		port := freeLoopbackPort(t)
		redistest.StartACL(t, user, password, "--tls-port", port, "--tls-cert-file", cert,
			"--tls-key-file", key, "--tls-ca-cert-file", ca, "--tls-auth-clients", "no")
		urls = append(urls, fmt.Sprintf("rediss://%s:%s@127.0.0.1:%s", user, password, port))
	}
	nodes := strings.Join(urls, ",")

	code, stdout, stderr := runCmd(t, nil, "exec", "--nodes", nodes, "--node-timeout", "5s", "--key", "k", "--wait", "1m", "--", "echo", "ran")
	if code != 77 || strings.Contains(stdout, "ran") || !strings.Contains(stderr, "node 2 (rediss://alice:xxxxx@127.0.0.1:") ||
		!strings.Contains(stderr, "certificate") {
		t.Fatalf("untrusted CA: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	noPassword(t, stdout, stderr)

	code, stdout, stderr = runCmd(t, nil, "exec", "--nodes", nodes, "--node-timeout", "5s", "--cacert", ca, "--key", "k", "--", "echo", "ran")
	if code != 0 || stdout != "ran\n" {
		t.Fatalf("--cacert: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	code, stdout, _ = runCmd(t, nil, "status", "--nodes", nodes, "--node-timeout", "5s", "--cacert", ca, "--key", "k")
	if code != 0 || !strings.Contains(stdout, "verdict: free") {
		t.Fatalf("status --cacert: exit %d\n%s", code, stdout)
	}

	insecure := strings.ReplaceAll(nodes, ",", "?skip_verify=true,") + "?skip_verify=true"
	code, stdout, stderr = runCmd(t, nil, "exec", "--nodes", insecure, "--node-timeout", "5s", "--key", "k", "--", "echo", "ran")
	if code != 0 || stdout != "ran\n" {
		t.Fatalf("skip_verify: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}
