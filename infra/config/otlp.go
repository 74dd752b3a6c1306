package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/runnerd/lambda-runner/internal/httpfield"
)

// OTLP is where and how spans are exported over OTLP/HTTP, from the
// standard OTEL_EXPORTER_OTLP_* variables; each per-signal variable
// (OTEL_EXPORTER_OTLP_TRACES_*) wins over its general one. It is read only
// when tracing is on with the http/protobuf protocol: the gRPC exporter of
// a TRACING=grpc build reads these variables itself.
type OTLP struct {
	// URL is OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given (path "/" when it
	// has none), else OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces appended
	// to its path, as the OTLP exporter specification says; "" for the
	// exporter's default, http://localhost:4318/v1/traces.
	URL string
	// Headers are sent with every export (…_HEADERS: key=value pairs,
	// comma-separated, values URL-encoded). They often hold credentials:
	// no error or log names a value.
	Headers map[string]string
	// Timeout bounds one export, retries included (…_TIMEOUT, in
	// milliseconds); 0 for the exporter's default of 10s.
	Timeout time.Duration
	// Gzip compresses export requests (…_COMPRESSION=gzip; none is the
	// default).
	Gzip bool
	// CertificateFile is a PEM file of the CAs trusted for an https
	// endpoint instead of the system's (…_CERTIFICATE).
	CertificateFile string
	// ClientCertificateFile and ClientKeyFile are the PEM client
	// certificate and key for mutual TLS (…_CLIENT_CERTIFICATE,
	// …_CLIENT_KEY), both or neither.
	ClientCertificateFile, ClientKeyFile string
}

// otlpPrefix is the namespace of the exporter variables; each is read as
// prefix+"TRACES_"+name, else prefix+name.
const otlpPrefix = "OTEL_EXPORTER_OTLP_"

// otlpVar returns the per-signal variable's value and name when it is
// set, else the general one's.
func (r *reader) otlpVar(name string) (string, string) {
	for _, n := range []string{otlpPrefix + "TRACES_" + name, otlpPrefix + name} {
		if v := strings.TrimSpace(r.getenv(n)); v != "" {
			return v, n
		}
	}
	return "", otlpPrefix + name
}

func (r *reader) otlp() OTLP {
	var o OTLP
	if v := strings.TrimSpace(r.getenv(otlpPrefix + "TRACES_ENDPOINT")); v != "" {
		o.URL = r.otlpURL(otlpPrefix+"TRACES_ENDPOINT", v, "")
	} else if v := strings.TrimSpace(r.getenv(otlpPrefix + "ENDPOINT")); v != "" {
		o.URL = r.otlpURL(otlpPrefix+"ENDPOINT", v, "v1/traces")
	}
	if v, name := r.otlpVar("HEADERS"); v != "" {
		o.Headers = r.otlpHeaders(name, v)
	}
	_, name := r.otlpVar("TIMEOUT")
	o.Timeout = time.Duration(r.int(name, 1, 3_600_000)) * time.Millisecond
	switch v, name := r.otlpVar("COMPRESSION"); strings.ToLower(v) {
	case "", "none":
	case "gzip":
		o.Gzip = true
	default:
		r.errs = append(r.errs, fmt.Errorf("%s: %q is not supported (gzip or none)", name, v))
	}
	o.CertificateFile, _ = r.otlpVar("CERTIFICATE")
	var certName, keyName string
	o.ClientCertificateFile, certName = r.otlpVar("CLIENT_CERTIFICATE")
	o.ClientKeyFile, keyName = r.otlpVar("CLIENT_KEY")
	if (o.ClientCertificateFile == "") != (o.ClientKeyFile == "") {
		r.errs = append(r.errs, fmt.Errorf("%s and %s: set both or neither", certName, keyName))
	}
	return o
}

// otlpURL checks an endpoint and appends signalPath (the general
// variable's /v1/traces) to its path.
func (r *reader) otlpURL(name, v, signalPath string) string {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		r.errs = append(r.errs, fmt.Errorf("%s: %q must be an http:// or https:// URL with a host", name, v))
		return ""
	}
	switch {
	case signalPath != "":
		u.Path = strings.TrimSuffix(u.Path, "/") + "/" + signalPath
		u.RawPath = ""
	case u.Path == "":
		u.Path = "/"
	}
	return u.String()
}

// otlpHeaders parses the W3C Baggage-like list the specification uses. An
// error names the variable and the entry's key or position, never a value.
func (r *reader) otlpHeaders(name, v string) map[string]string {
	h := map[string]string{}
	for i, entry := range strings.Split(v, ",") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		key, value, ok := strings.Cut(entry, "=")
		key = strings.TrimSpace(key)
		if !ok || !httpfield.ValidName(key) {
			r.errs = append(r.errs, fmt.Errorf("%s: entry %d must be key=value with a header name as key", name, i+1))
			continue
		}
		dec, err := url.PathUnescape(strings.TrimSpace(value))
		if err != nil || !httpfield.ValidValue(dec) {
			r.errs = append(r.errs, fmt.Errorf("%s: the value of %q is not a valid URL-encoded header value", name, key))
			continue
		}
		h[key] = dec
	}
	return h
}
