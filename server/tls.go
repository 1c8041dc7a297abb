package server

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"time"

	"github.com/logbook-dev/logbook/audit"
)

// maxPEMBytes bounds what is read of a certificate or key file: a chain of
// a few certificates is some kilobytes; a larger file, or a device that
// never ends (/dev/zero), is refused before it fills the memory.
const maxPEMBytes = 1 << 20

// certExpiryWarning is how long before its certificate expires a server
// starting with it warns.
const certExpiryWarning = 14 * 24 * time.Hour

// loadCertificate loads the key pair certFile and keyFile for a server
// starting at now, refusing one that could serve no client: a key not
// matching the certificate, or the server's own certificate expired or
// not yet valid. Before, a server started with an expired certificate, and
// every client's handshake failed with nothing in the server's log saying
// why. A certificate of the chain after it expired or not yet valid is
// warned of, not refused: chains often carry an extra certificate that
// clients do not need (Let's Encrypt's served the cross-signed ISRG Root
// X1 for years after it expired, for old Android), and a client that
// trusts a root by another path ignores it; a client that needs it will
// refuse the server, as the warning says. A certificate that expires
// within certExpiryWarning is served with a warning. Each file is read to
// at most maxPEMBytes.
func loadCertificate(certFile, keyFile string, now time.Time, log *slog.Logger) (*tls.Certificate, error) {
	certPEM, err := readPEM(certFile, "a PEM certificate file")
	var keyPEM []byte
	if err == nil {
		keyPEM, err = readPEM(keyFile, "a PEM key file")
	}
	var cert tls.Certificate
	if err == nil {
		cert, err = tls.X509KeyPair(certPEM, keyPEM)
	}
	if err != nil {
		return nil, fmt.Errorf("the TLS certificate %s with the key %s: %w", certFile, keyFile, err)
	}
	for i, der := range cert.Certificate {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("the TLS certificate %s: %w", certFile, err)
		}
		which := "the TLS certificate"
		if i > 0 {
			which = fmt.Sprintf("TLS certificate %d of the chain (%s) in", i+1, c.Subject)
		}
		valid := fmt.Sprintf("valid from %s to %s", c.NotBefore.UTC().Format(time.RFC3339), c.NotAfter.UTC().Format(time.RFC3339))
		var invalid error
		switch {
		case now.After(c.NotAfter):
			invalid = fmt.Errorf("%s %s has expired: %s, and it is now %s", which, certFile, valid, now.UTC().Format(time.RFC3339))
		case now.Before(c.NotBefore):
			invalid = fmt.Errorf("%s %s is not valid yet: %s, and it is now %s", which, certFile, valid, now.UTC().Format(time.RFC3339))
		case c.NotAfter.Sub(now) < certExpiryWarning:
			log.Warn("the TLS certificate expires soon: renew it and restart the server", "cert", certFile, "certificate", i+1,
				"not_after", c.NotAfter.UTC().Format(time.RFC3339), "left", c.NotAfter.Sub(now).Round(time.Minute).String())
		}
		switch {
		case invalid != nil && i == 0:
			return nil, invalid
		case invalid != nil:
			log.Warn(invalid.Error()+": a client that needs it to reach a root it trusts will refuse the server; one that trusts a root by another path will not",
				"cert", certFile, "certificate", i+1)
		}
	}
	return &cert, nil
}

// readPEM reads a certificate or key file, a regular file of at most
// maxPEMBytes (audit.ReadFile: a named pipe held the server at start,
// deaf to SIGTERM, until it was killed).
func readPEM(path, what string) ([]byte, error) {
	return audit.ReadFile(path, maxPEMBytes, what)
}
