package server

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io/fs"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeCert writes a self-signed certificate for localhost valid from
// notBefore to notAfter, and its key, into dir; it returns their paths and
// the certificate's PEM.
func writeCert(t *testing.T, dir, name string, notBefore, notAfter time.Time) (certFile, keyFile string, certPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, certPEM
}

// TestCertificateChecked: a server is refused a certificate it could serve
// no client with — expired, not valid yet, a key not its own — with an
// error naming the file and the dates, before any ledger file is created;
// one expiring within 14 days starts with a warning, one valid for long
// without, and so does a chain holding an expired certificate after the
// server's own (before, refused: a Let's Encrypt chain with its expired
// cross-signed root could not be served), warning of it by name. Before, the server started with an
// expired or not yet valid certificate and said nothing: every client's
// handshake failed. A certificate or key file of more than 1 MiB is
// refused unread (before, /dev/zero was read until memory ran out: 1.3 GB
// in 6 s through the built binary), and so is what is not a regular file.
func TestCertificateChecked(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	day := 24 * time.Hour
	expired, expiredKey, expiredPEM := writeCert(t, dir, "expired", now.Add(-30*day), now.Add(-day))
	future, futureKey, _ := writeCert(t, dir, "future", now.Add(day), now.Add(365*day))
	good, goodKey, goodPEM := writeCert(t, dir, "good", now.Add(-day), now.Add(365*day))
	soon, soonKey, _ := writeCert(t, dir, "soon", now.Add(-day), now.Add(3*day))
	chain := filepath.Join(dir, "chain.crt")
	if err := os.WriteFile(chain, append(append([]byte{}, goodPEM...), expiredPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.pem")
	if err := os.WriteFile(big, append(bytes.Repeat([]byte{'\n'}, 2<<20), goodPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	// A named pipe no one writes: opening it waited for ever (the server
	// held at start, deaf to SIGTERM).
	fifo := filepath.Join(dir, "fifo.pem")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	stamp := func(d time.Duration) string { return now.Add(d).UTC().Format(time.RFC3339) }
	for _, c := range []struct {
		name, cert, key string
		says            []string
	}{
		{"expired", expired, expiredKey, []string{expired, "has expired", stamp(-30 * day), stamp(-day)}},
		{"not valid yet", future, futureKey, []string{future, "not valid yet", stamp(day), stamp(365 * day)}},
		{"another certificate's key", good, expiredKey, []string{good, expiredKey, "does not match"}},
		{"a certificate file of 2 MiB", big, goodKey, []string{big, "larger than 1048576 bytes"}},
		{"a key file of 2 MiB", good, big, []string{big, "larger than 1048576 bytes"}},
		{"/dev/zero as the certificate", "/dev/zero", goodKey, []string{"/dev/zero", "not a regular file"}},
		{"/dev/zero as the key", good, "/dev/zero", []string{"/dev/zero", "not a regular file"}},
		{"a named pipe as the certificate", fifo, goodKey, []string{fifo, "not a regular file"}},
		{"a named pipe as the key", good, fifo, []string{fifo, "not a regular file"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "l.db")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			started := false
			err := Serve(ctx, Ledger{DB: db, Skills: t.TempDir()},
				Options{Listen: "127.0.0.1:0", TLSCert: c.cert, TLSKey: c.key, Logger: slog.New(slog.DiscardHandler),
					Ready: func(net.Addr) { started = true; cancel() }})
			if started || err == nil {
				t.Fatalf("the server started: %v", err)
			}
			for _, s := range c.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%v: does not say %q", err, s)
				}
			}
			if _, err := os.Stat(db); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a server refused its certificate left a ledger file: %v", err)
			}
		})
	}

	for _, c := range []struct {
		cert, key string
		warns     []string // nil: no warning
	}{
		{soon, soonKey, []string{"expires soon"}},
		{good, goodKey, nil},
		{chain, goodKey, []string{"certificate 2 of the chain", "CN=expired", "has expired", stamp(-day), "a client that needs it"}},
	} {
		var logged bytes.Buffer
		log := slog.New(slog.NewTextHandler(&logged, nil))
		ctx, cancel := context.WithCancel(context.Background())
		ready := make(chan net.Addr, 1)
		done := make(chan error, 1)
		go func() {
			done <- Serve(ctx, Ledger{DB: filepath.Join(t.TempDir(), "l.db"), Skills: t.TempDir()},
				Options{Listen: "127.0.0.1:0", TLSCert: c.cert, TLSKey: c.key, Logger: log, Ready: func(a net.Addr) { ready <- a }})
		}()
		var addr net.Addr
		select {
		case addr = <-ready:
		case err := <-done:
			t.Fatalf("%s: %v", c.cert, err)
		}
		client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		if res, err := client.Get("https://" + addr.String() + "/healthz"); err != nil || res.StatusCode != http.StatusOK {
			t.Errorf("%s: /healthz over TLS: %v %v", c.cert, res, err)
		} else {
			res.Body.Close()
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s: %v", c.cert, err)
		}
		warned := strings.Contains(logged.String(), "level=WARN") && strings.Contains(logged.String(), c.cert)
		for _, s := range c.warns {
			warned = warned && strings.Contains(logged.String(), s)
		}
		if warned != (c.warns != nil) {
			t.Errorf("%s: warned %v, want %q: %s", c.cert, warned, c.warns, logged.String())
		}
	}
}
