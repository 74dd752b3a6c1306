// Package smtest is a local server speaking the AWS Secrets Manager wire
// protocol (JSON 1.1 over HTTP, SigV4-signed) for tests that point the real
// aws-sdk-go-v2 client at it. It holds secrets in memory with versions and
// staging labels, and moves AWSCURRENT and AWSPREVIOUS on PutSecretValue as
// Secrets Manager does.
package smtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// Staging labels Secrets Manager moves itself.
const (
	Current  = "AWSCURRENT"
	Previous = "AWSPREVIOUS"
)

type version struct {
	id      string
	value   string
	stages  map[string]bool
	created time.Time
}

// Server is the fake service. Create it with New.
type Server struct {
	URL string

	mu       sync.Mutex
	secrets  map[string][]*version // by name, oldest first
	seq      int
	requests map[string]int // by operation
	srv      *httptest.Server
}

// New starts a server; it stops when the test ends.
func New(t testing.TB) *Server {
	s := &Server{secrets: map[string][]*version{}, requests: map[string]int{}}
	s.srv = httptest.NewServer(s)
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// Client is the real SDK client, with static test credentials, pointed at s.
func (s *Server) Client() *secretsmanager.Client {
	cfg := aws.Config{
		Region:      "eu-west-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDSMTEST", "smtest-secret-key", ""),
		HTTPClient:  s.srv.Client(),
	}
	return secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) { o.BaseEndpoint = aws.String(s.URL) })
}

// Put stores a new AWSCURRENT version of name, as PutSecretValue does.
func (s *Server) Put(name, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.put(name, value, "")
}

// Requests counts the calls of one operation ("GetSecretValue", …).
func (s *Server) Requests(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[op]
}

// put adds a version; s.mu is held.
func (s *Server) put(name, value, id string) *version {
	for _, v := range s.secrets[name] {
		if id != "" && v.id == id {
			return v // idempotent retry of the same ClientRequestToken
		}
	}
	for _, v := range s.secrets[name] {
		delete(v.stages, Previous)
		if v.stages[Current] {
			delete(v.stages, Current)
			v.stages[Previous] = true
		}
	}
	s.seq++
	if id == "" {
		id = fmt.Sprintf("00000000-0000-4000-8000-%012d", s.seq)
	}
	v := &version{id: id, value: value, stages: map[string]bool{Current: true}, created: time.Unix(1_700_000_000+int64(s.seq), 0)}
	s.secrets[name] = append(s.secrets[name], v)
	return v
}

func (s *Server) arn(name string) string {
	return "arn:aws:secretsmanager:eu-west-1:123456789012:secret:" + name + "-AbCdEf"
}

// ServeHTTP answers one JSON 1.1 request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	op, ok := strings.CutPrefix(target, "secretsmanager.")
	if r.Method != http.MethodPost || !ok || !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		fail(w, http.StatusBadRequest, "InvalidRequestException", "not a signed Secrets Manager request")
		return
	}
	var in struct {
		SecretId, VersionStage, VersionId, SecretString, ClientRequestToken string
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		fail(w, http.StatusBadRequest, "InvalidRequestException", "body is not JSON")
		return
	}
	name := in.SecretId
	if i := strings.LastIndex(name, ":secret:"); i >= 0 {
		name = strings.TrimSuffix(name[i+len(":secret:"):], "-AbCdEf")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[op]++
	versions, exists := s.secrets[name]
	if !exists {
		fail(w, http.StatusBadRequest, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	switch op {
	case "GetSecretValue":
		stage := in.VersionStage
		if stage == "" && in.VersionId == "" {
			stage = Current
		}
		for _, v := range versions {
			if (in.VersionId != "" && v.id == in.VersionId) || (stage != "" && v.stages[stage]) {
				json.NewEncoder(w).Encode(map[string]any{
					"ARN": s.arn(name), "Name": name, "VersionId": v.id, "SecretString": v.value,
					"VersionStages": stages(v), "CreatedDate": v.created.Unix(),
				})
				return
			}
		}
		fail(w, http.StatusBadRequest, "ResourceNotFoundException", "Secrets Manager can't find the specified secret value for staging label: "+stage)
	case "PutSecretValue":
		if in.SecretString == "" {
			fail(w, http.StatusBadRequest, "InvalidParameterException", "SecretString is required")
			return
		}
		v := s.put(name, in.SecretString, in.ClientRequestToken)
		json.NewEncoder(w).Encode(map[string]any{"ARN": s.arn(name), "Name": name, "VersionId": v.id, "VersionStages": stages(v)})
	case "ListSecretVersionIds":
		var list []map[string]any
		for _, v := range versions {
			if len(v.stages) > 0 {
				list = append(list, map[string]any{"VersionId": v.id, "VersionStages": stages(v), "CreatedDate": v.created.Unix()})
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"ARN": s.arn(name), "Name": name, "Versions": list})
	default:
		fail(w, http.StatusBadRequest, "InvalidRequestException", "operation "+op+" is not served by smtest")
	}
}

func stages(v *version) []string {
	var out []string
	for _, st := range []string{Current, Previous} {
		if v.stages[st] {
			out = append(out, st)
		}
	}
	return out
}

func fail(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}
