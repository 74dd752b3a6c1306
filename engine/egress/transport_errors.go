package egress

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
)

// transportReason describes a transport failure from what is known to be
// safe to show. Go's own messages are not used wholesale: url.Error quotes
// the full URL, query included, and some transport errors quote bytes the
// server sent back, which may echo request headers.
func transportReason(err error) string {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		if dnsErr.IsNotFound {
			return "cannot resolve " + dnsErr.Name + ": no such host"
		}
		return "cannot resolve " + dnsErr.Name + ": " + dnsErr.Err
	}
	var certErr *tls.CertificateVerificationError
	if errors.As(err, &certErr) {
		// x509 messages name certificates and hosts, nothing the request
		// carried.
		return "TLS certificate verification failed: " + certErr.Err.Error()
	}
	var recErr tls.RecordHeaderError
	if errors.As(err, &recErr) {
		return "TLS handshake failed: the server did not answer with TLS"
	}
	var alert tls.AlertError
	if errors.As(err, &alert) {
		return "TLS handshake failed: " + alert.Error()
	}
	var sysErr *os.SyscallError
	if errors.As(err, &sysErr) {
		return sysErr.Error() // e.g. "connect: connection refused"
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return "i/o timeout"
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "connection closed by the server"
	}
	return "transport error"
}
