package services

import (
	"fmt"
	"sort"
	"strings"

	"github.com/runnerd/lambda-runner/engine/document"
	"github.com/runnerd/lambda-runner/engine/egress"
	"github.com/runnerd/lambda-runner/engine/glob"
	"github.com/runnerd/lambda-runner/engine/models"
	"github.com/runnerd/lambda-runner/engine/secrets"
	"github.com/runnerd/lambda-runner/engine/toolsets"
	"github.com/runnerd/lambda-runner/protocol"
)

// Request is what Prepare learns about a request's runtime services: the
// model table nodes resolve roles against, the toolsets they may name and
// the policy literal URLs are checked against.
type Request struct {
	// Models is runtime.models when the request has it, else the
	// deployment's table (nil when neither).
	Models *models.Table
	// ModelsFrom names where Models came from, for messages.
	ModelsFrom string
	// ModelsOK is false when runtime.models is invalid: its problems are
	// reported already, and roles are not checked against it.
	ModelsOK bool
	// Toolsets are the names of runtime.toolsets.
	Toolsets map[string]bool
	// HTTP is the execution's egress client, nil when the policy is
	// invalid. It holds no connection until a node sends a request.
	HTTP *egress.Client
	// Policy is the request's HTTP policy, for the static host check.
	Policy protocol.HTTPPolicy
}

// Check validates the runtime payload's services and reports their
// problems in d at their request paths; clients are the process's model
// clients, which hold the rule on credentials. It runs before the workflow
// is compiled, so that node kinds can check what they name against what it
// returns.
func (c *Config) Check(req *protocol.ExecutionRequest, clients *models.Clients, d *document.Problems) Request {
	rt := &req.Runtime
	var s Request
	// runtime.models, when present (even empty), replaces the deployment's
	// table entirely: the server decided which models this execution uses.
	if rt.Models != nil {
		t, err := models.NewTable("runtime.models", rt.Models)
		d.AddErr("runtime.models", err)
		// Credentials stay home: refused here, before acceptance, by the
		// rule every model call is held to.
		d.AddErr("runtime.models", clients.CheckCredentials("runtime.models", rt.Models))
		s.Models, s.ModelsFrom, s.ModelsOK = t, "runtime.models", err == nil
	} else {
		s.Models, s.ModelsFrom, s.ModelsOK = c.ModelTable, "the runner's model table", true
	}

	d.AddErr("runtime.toolsets", toolsets.Validate("runtime.toolsets", rt.Toolsets))
	s.Toolsets = make(map[string]bool, len(rt.Toolsets))
	for _, t := range rt.Toolsets {
		s.Toolsets[t.Name] = true
	}

	h, err := egress.New(rt.HTTP.Policy, c.HTTP)
	d.AddErr("runtime.http.policy", err)
	s.HTTP, s.Policy = h, rt.HTTP.Policy

	// A host pattern that never matches would make its secret unusable
	// everywhere; one that is malformed is refused like a policy pattern.
	names := make([]string, 0, len(rt.HTTP.Secrets))
	for name := range rt.HTTP.Secrets {
		names = append(names, name)
	}
	sort.Strings(names)
	total := 0
	for _, v := range secrets.InRequest(req) {
		total += len(v)
	}
	if total > secrets.MaxSecretsBytes {
		// The redactor is built from every one of them, in some fifty
		// forms each.
		d.Addf("runtime", "the secret values of a request (runtime.http.secrets, model API keys and headers, toolset headers) may be at most %d bytes together", secrets.MaxSecretsBytes)
	}
	for _, name := range names {
		if n := len(rt.HTTP.Secrets[name].Value); n > secrets.MaxSecretBytes {
			// The bound every secret-bearing evaluation is checked at
			// (see secrets.Shadows); the value is not quoted.
			d.Addf(fmt.Sprintf("runtime.http.secrets.%s", name), "a secret may be at most %d bytes long", secrets.MaxSecretBytes)
		}
		if err := glob.CheckList(len(rt.HTTP.Secrets[name].Hosts)); err != nil {
			d.Addf(fmt.Sprintf("runtime.http.secrets.%s.hosts", name), "%v", err)
			continue
		}
		for i, h := range rt.HTTP.Secrets[name].Hosts {
			check := glob.ValidateHost
			if strings.Contains(h, ":") {
				check = glob.Validate // an IPv6 literal has no labels
			}
			if err := check(h); err != nil {
				d.Addf(fmt.Sprintf("runtime.http.secrets.%s.hosts[%d]", name, i), "%v", err)
			}
		}
	}
	return s
}

// LookupRole reports whether a statically named role resolves in the
// execution's model table, directly or through the general role. It is
// true when the table is invalid, whose problems are reported already.
func (s *Request) LookupRole(role string) bool {
	if !s.ModelsOK {
		return true
	}
	_, ok := s.Models.Lookup(role)
	return ok
}
