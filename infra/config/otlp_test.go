package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// The OTLP/HTTP exporter's variables, as the OpenTelemetry specification
// reads them: the general endpoint gets /v1/traces, the per-signal one is
// used as is, and each per-signal variable wins.
func TestLoadOTLP(t *testing.T) {
	on := func(e env) env {
		e["OTEL_TRACES_EXPORTER"] = "otlp"
		return e
	}
	tests := []struct {
		name string
		env  env
		want OTLP
	}{
		{"defaults", on(env{}), OTLP{}},
		{"base endpoint", on(env{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}), OTLP{URL: "http://collector:4318/v1/traces"}},
		{"base endpoint with a path", on(env{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c.example/otlp/"}), OTLP{URL: "https://c.example/otlp/v1/traces"}},
		{"signal endpoint as is", on(env{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:1", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://b/x/spans"}), OTLP{URL: "https://b/x/spans"}},
		{"signal endpoint without a path", on(env{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:4318"}), OTLP{URL: "http://b:4318/"}},
		{"headers", on(env{"OTEL_EXPORTER_OTLP_HEADERS": " api-key = a%20b ,x=1=2,, "}), OTLP{Headers: map[string]string{"api-key": "a b", "x": "1=2"}}},
		{"signal headers win", on(env{"OTEL_EXPORTER_OTLP_HEADERS": "a=1", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "b=2"}), OTLP{Headers: map[string]string{"b": "2"}}},
		{"timeout", on(env{"OTEL_EXPORTER_OTLP_TIMEOUT": "2500"}), OTLP{Timeout: 2500 * time.Millisecond}},
		{"signal timeout wins", on(env{"OTEL_EXPORTER_OTLP_TIMEOUT": "2500", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "100"}), OTLP{Timeout: 100 * time.Millisecond}},
		{"gzip", on(env{"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}), OTLP{Gzip: true}},
		{"signal compression wins", on(env{"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "none"}), OTLP{}},
		{"tls files", on(env{"OTEL_EXPORTER_OTLP_CERTIFICATE": "/ca.pem", "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE": "/c.pem", "OTEL_EXPORTER_OTLP_CLIENT_KEY": "/k.pem"}),
			OTLP{CertificateFile: "/ca.pem", ClientCertificateFile: "/c.pem", ClientKeyFile: "/k.pem"}},
		// The gRPC exporter reads its own settings; tracing off reads none.
		{"grpc", on(env{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317"}), OTLP{}},
		{"off", env{"OTEL_EXPORTER_OTLP_ENDPOINT": "not a url"}, OTLP{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(tt.env.get)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.OTLP, tt.want) {
				t.Errorf("OTLP = %+v, want %+v", c.OTLP, tt.want)
			}
		})
	}
}

// Every bad exporter setting is refused at start, naming its variable and
// never a header's value.
func TestLoadOTLPErrors(t *testing.T) {
	const secret = "s3cr3t"
	tests := []struct {
		env  env
		want string
	}{
		{env{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{env{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "ftp://c/"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
		{env{"OTEL_EXPORTER_OTLP_ENDPOINT": "http:///path"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{env{"OTEL_EXPORTER_OTLP_HEADERS": "authorization"}, "OTEL_EXPORTER_OTLP_HEADERS: entry 1"},
		{env{"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "ok=1,=" + secret}, "OTEL_EXPORTER_OTLP_TRACES_HEADERS: entry 2"},
		{env{"OTEL_EXPORTER_OTLP_HEADERS": "authorization=" + secret + "%zz"}, `"authorization"`},
		{env{"OTEL_EXPORTER_OTLP_HEADERS": "authorization=" + secret + "%0d%0aX: y"}, `"authorization"`},
		{env{"OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}, "OTEL_EXPORTER_OTLP_TIMEOUT"},
		{env{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "0"}, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"},
		{env{"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, "OTEL_EXPORTER_OTLP_COMPRESSION"},
		{env{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "/c.pem"}, "OTEL_EXPORTER_OTLP_CLIENT_KEY"},
	}
	for _, tt := range tests {
		tt.env["OTEL_TRACES_EXPORTER"] = "otlp"
		_, err := Load(tt.env.get)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want one naming %s", tt.env, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("%v: the error shows a header value: %v", tt.env, err)
		}
	}
}

// Whatever the header list, Load does not panic, and an error never shows
// a value (each is marked so the check cannot mistake a key for one).
func FuzzLoadOTLPHeaders(f *testing.F) {
	for _, s := range []string{"a=b", "k=%zz", "=v", "k", "a=1,,b=2", "k=v%0d%0a", "k v=1", "k:=1"} {
		f.Add(s)
	}
	const mark = "zq-secret-"
	f.Fuzz(func(t *testing.T, list string) {
		var b strings.Builder
		for i, entry := range strings.Split(list, ",") {
			if i > 0 {
				b.WriteByte(',')
			}
			if k, v, ok := strings.Cut(entry, "="); ok {
				entry = k + "=" + mark + v
			}
			b.WriteString(entry)
		}
		c, err := Load(env{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_HEADERS": b.String()}.get)
		if err != nil && strings.Contains(err.Error(), mark) && !strings.Contains(list, "zq-secret") {
			t.Errorf("error shows a value: %v", err)
		}
		if err == nil {
			for k, v := range c.OTLP.Headers {
				if k == "" || strings.ContainsAny(k+v, "\r\n") {
					t.Errorf("header %q accepted", k)
				}
			}
		}
	})
}
