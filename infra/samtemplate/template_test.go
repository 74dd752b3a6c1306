package samtemplate_test

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/cloudformation/cloudwatch"
	"github.com/awslabs/goformation/v7/cloudformation/serverless"
	"github.com/awslabs/goformation/v7/intrinsics"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	templatePath = "../../template.yaml"
	localAPIPath = "../../events/local-api.yaml"
	functionID   = "RunnerFunction"
	secretID     = "TokenSecret"
	// The alias SAM generates from AutoPublishAlias: live.
	generatedAlias = "RunnerFunctionAliaslive"

	// What the resolver writes for references to stack resources.
	generatedSecret = "<Ref TokenSecret>"
	existingSecret  = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:runner-tokens-AbCdEf"
)

// pseudo holds the pseudo parameters the resolver knows.
var pseudo = map[string]string{
	"AWS::AccountId": "123456789012",
	"AWS::Partition": "aws",
	"AWS::Region":    "eu-west-1",
	"AWS::StackName": "workflow-runner",
	"AWS::URLSuffix": "amazonaws.com",
}

// resolver evaluates Ref, Fn::Sub, Fn::If and Fn::Equals the way
// CloudFormation does for the template's parameter values (defaults, or
// overrides), and turns references to resources into readable markers:
// "<Ref X>", "<GetAtt X.Attr>". goformation's own handlers resolve a Ref to a
// resource to nothing and cannot evaluate a condition that compares a Number
// parameter with a string, which is why they are replaced.
type resolver struct {
	raw  map[string]any // the template as parsed, parameter overrides applied
	errs []string
}

func (r *resolver) errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *resolver) handlers() map[string]intrinsics.IntrinsicHandler {
	wrap := func(f func(any) any) intrinsics.IntrinsicHandler {
		return func(_ string, in, tmpl any) any {
			if m, ok := tmpl.(map[string]any); ok {
				r.raw = m
			}
			return f(in)
		}
	}
	return map[string]intrinsics.IntrinsicHandler{
		"Ref":        wrap(r.ref),
		"Fn::GetAtt": wrap(r.getAtt),
		"Fn::Sub":    wrap(r.sub),
		"Fn::If":     wrap(r.fnIf),
		"Fn::Equals": wrap(func(in any) any { return r.eval(map[string]any{"Fn::Equals": in}) }),
	}
}

func (r *resolver) section(name string) map[string]any {
	m, _ := r.raw[name].(map[string]any)
	return m
}

func (r *resolver) ref(in any) any {
	name, _ := in.(string)
	if name == "AWS::NoValue" {
		return nil
	}
	if v, ok := pseudo[name]; ok {
		return v
	}
	if p, ok := r.section("Parameters")[name].(map[string]any); ok {
		def, ok := p["Default"]
		if !ok {
			r.errorf("parameter %s has no default", name)
			return nil
		}
		if p["Type"] == "Number" {
			// Typed, so that MemorySize: !Ref MemorySize fills an int.
			f, err := strconv.ParseFloat(str(def), 64)
			if err != nil {
				r.errorf("parameter %s: %v", name, err)
			}
			return f
		}
		return str(def)
	}
	if _, ok := r.section("Resources")[name]; ok {
		return "<Ref " + name + ">"
	}
	if name == generatedAlias {
		// SAM generates it from AutoPublishAlias.
		return "<Ref " + name + ">"
	}
	r.errorf("Ref to unknown name %v", in)
	return nil
}

func (r *resolver) getAtt(in any) any {
	switch v := in.(type) {
	case string:
		return "<GetAtt " + v + ">"
	case []any:
		if len(v) == 2 {
			return "<GetAtt " + str(v[0]) + "." + str(v[1]) + ">"
		}
	}
	r.errorf("bad Fn::GetAtt %v", in)
	return nil
}

var subVar = regexp.MustCompile(`\$\{([^}]*)\}`)

func (r *resolver) sub(in any) any {
	var (
		src  string
		vars map[string]any
	)
	switch v := in.(type) {
	case string:
		src = v
	case []any:
		if len(v) == 2 {
			src, _ = v[0].(string)
			vars, _ = v[1].(map[string]any)
		}
	}
	if src == "" {
		r.errorf("bad Fn::Sub %v", in)
		return nil
	}
	return subVar.ReplaceAllStringFunc(src, func(m string) string {
		name := m[2 : len(m)-1]
		switch v, ok := vars[name]; {
		case strings.HasPrefix(name, "!"):
			return "${" + name[1:] + "}"
		case ok:
			return str(v)
		case strings.Contains(name, "."):
			return str(r.getAtt(name))
		}
		return str(r.ref(name))
	})
}

func (r *resolver) fnIf(in any) any {
	args, _ := in.([]any)
	if len(args) != 3 {
		r.errorf("bad Fn::If %v", in)
		return nil
	}
	if r.condition(str(args[0])) {
		return args[1]
	}
	return args[2]
}

// condition evaluates a named condition of the template.
func (r *resolver) condition(name string) bool {
	expr, ok := r.section("Conditions")[name]
	if !ok {
		r.errorf("unknown condition %q", name)
		return false
	}
	return r.eval(expr)
}

// eval evaluates a condition expression from the raw template.
func (r *resolver) eval(expr any) bool {
	if b, ok := expr.(bool); ok {
		return b
	}
	m, _ := expr.(map[string]any)
	if len(m) != 1 {
		r.errorf("bad condition %v", expr)
		return false
	}
	for fn, arg := range m {
		args, _ := arg.([]any)
		switch fn {
		case "Fn::Equals":
			// CloudFormation compares the string forms: a Number parameter
			// of 0 equals "0".
			if len(args) == 2 {
				return r.scalar(args[0]) == r.scalar(args[1])
			}
		case "Fn::Not":
			if len(args) == 1 {
				return !r.eval(args[0])
			}
		case "Fn::And", "Fn::Or":
			all, any := true, false
			for _, a := range args {
				b := r.eval(a)
				all, any = all && b, any || b
			}
			if fn == "Fn::And" {
				return all
			}
			return any
		case "Condition":
			return r.condition(str(arg))
		}
	}
	r.errorf("bad condition %v", expr)
	return false
}

func (r *resolver) scalar(v any) string {
	if m, ok := v.(map[string]any); ok {
		if name, ok := m["Ref"]; ok && len(m) == 1 {
			return str(r.ref(name))
		}
		r.errorf("unsupported operand %v", v)
	}
	return str(v)
}

func str(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// strs reads an IAM Action or Resource: a string or a list of them.
func strs(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			out = append(out, str(e))
		}
		return out
	}
	return nil
}

// view is the template as CloudFormation would see it for one set of
// parameter values.
type view struct {
	t    *testing.T
	r    *resolver
	tmpl *cloudformation.Template
	fn   *serverless.Function
}

func load(t *testing.T, path string, overrides map[string]string) *view {
	t.Helper()
	r := &resolver{}
	opts := &intrinsics.ProcessorOptions{
		IntrinsicHandlerOverrides: r.handlers(),
		ParameterOverrides:        map[string]any{},
	}
	for k, v := range overrides {
		opts.ParameterOverrides[k] = v
	}
	tmpl, err := goformation.OpenWithOptions(path, opts)
	if err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	if len(r.errs) > 0 {
		t.Fatalf("resolving %s:\n%s", path, strings.Join(r.errs, "\n"))
	}
	for k := range overrides {
		// goformation ignores overrides of unknown parameters.
		if _, ok := tmpl.Parameters[k]; !ok {
			t.Fatalf("override of unknown parameter %s", k)
		}
	}
	fn, err := tmpl.GetServerlessFunctionWithName(functionID)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &view{t: t, r: r, tmpl: tmpl, fn: fn}
}

func (v *view) env() map[string]string {
	if v.fn.Environment == nil {
		v.t.Fatal("function has no Environment")
	}
	return v.fn.Environment.Variables
}

// statements returns the statements of the function's inline policies,
// without the ones a condition removed.
func (v *view) statements() []map[string]any {
	v.t.Helper()
	p := v.fn.Policies
	if p == nil || p.IAMPolicyDocumentArray == nil {
		v.t.Fatal("function has no list of inline policy documents")
	}
	if p.StringArray != nil && slices.ContainsFunc(*p.StringArray, func(s string) bool { return s != "" }) {
		v.t.Errorf("function has managed policies %q; want only inline statements", *p.StringArray)
	}
	var out []map[string]any
	for _, doc := range *p.IAMPolicyDocumentArray {
		if len(doc.Statement) == 0 {
			v.t.Errorf("policy document without statements (a managed policy or SAM policy template?)")
		}
		for _, s := range doc.Statement {
			switch s := s.(type) {
			case nil: // AWS::NoValue
			case map[string]any:
				out = append(out, s)
			default:
				v.t.Errorf("statement %v is not an object", s)
			}
		}
	}
	return out
}

// granting returns the statements with an action of the service prefix.
func (v *view) granting(service string) []map[string]any {
	var out []map[string]any
	for _, s := range v.statements() {
		if slices.ContainsFunc(strs(s["Action"]), func(a string) bool {
			return strings.HasPrefix(strings.ToLower(a), service+":")
		}) {
			out = append(out, s)
		}
	}
	return out
}

func (v *view) logGroupFor(function string) *int {
	v.t.Helper()
	want := "/aws/lambda/<Ref " + function + ">"
	for id, g := range v.tmpl.GetAllLogsLogGroupResources() {
		if g.LogGroupName != nil && *g.LogGroupName == want {
			if g.RetentionInDays == nil {
				v.t.Fatalf("log group %s has no RetentionInDays", id)
			}
			return g.RetentionInDays
		}
	}
	v.t.Fatalf("no AWS::Logs::LogGroup named %s", want)
	return nil
}

func (v *view) output(name string) string {
	v.t.Helper()
	o, ok := v.tmpl.Outputs[name]
	if !ok {
		v.t.Fatalf("no output %s", name)
	}
	return str(o.Value)
}

// alarmNames are the template's alarms, each with a runbook line in
// docs/deploy.md.
var alarmNames = []string{"ErrorsAlarm", "FailedExecutionsAlarm", "ThrottlesAlarm", "DurationAlarm", "UnauthorizedAlarm", "UnavailableAlarm",
	"CanaryErrorsAlarm", "CanaryFailedExecutionsAlarm", "CanaryUnavailableAlarm"}

func (v *view) alarm(name string) *cloudwatch.Alarm {
	a, err := v.tmpl.GetCloudWatchAlarmWithName(name)
	if err != nil {
		v.t.Fatalf("alarm %s: %v", name, err)
	}
	return a
}

// bedrockRegions is the aws:RequestedRegion condition of the Bedrock
// statement.
func (v *view) bedrockRegions() string {
	st := v.granting("bedrock")
	if len(st) != 1 {
		return "<no bedrock statement>"
	}
	c, _ := st[0]["Condition"].(map[string]any)
	eq, _ := c["StringEquals"].(map[string]any)
	return strings.Join(strs(eq["aws:RequestedRegion"]), ",")
}

func deref[T any](p *T) any {
	if p == nil {
		return "<unset>"
	}
	return *p
}

func TestFunction(t *testing.T) {
	v := load(t, templatePath, nil)
	fn := v.fn
	if tr := v.tmpl.Transform; tr == nil || tr.String == nil || *tr.String != "AWS::Serverless-2016-10-31" {
		t.Errorf("Transform = %v, want AWS::Serverless-2016-10-31", tr)
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"Runtime", deref(fn.Runtime), "provided.al2023"},
		{"Architectures", fmt.Sprint(fn.Architectures), "[arm64]"},
		{"Handler", deref(fn.Handler), "bootstrap"},
		{"CodeUri", fn.CodeUri != nil && fn.CodeUri.String != nil && *fn.CodeUri.String == ".", true},
		{"Metadata.BuildMethod", fn.AWSCloudFormationMetadata["BuildMethod"], "makefile"},
		{"MemorySize", deref(fn.MemorySize), 512},
		{"Timeout", deref(fn.Timeout), 300},
		{"ReservedConcurrentExecutions", deref(fn.ReservedConcurrentExecutions), 10},
		{"FunctionUrlConfig set", fn.FunctionUrlConfig != nil, true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	if u := fn.FunctionUrlConfig; u != nil {
		// Auth is the runner's bearer token; streaming carries the NDJSON.
		if u.AuthType != "NONE" {
			t.Errorf("FunctionUrlConfig.AuthType = %q, want NONE", u.AuthType)
		}
		if got := deref(u.InvokeMode); got != "RESPONSE_STREAM" {
			t.Errorf("FunctionUrlConfig.InvokeMode = %v, want RESPONSE_STREAM", got)
		}
		if u.Cors != nil {
			t.Errorf("FunctionUrlConfig.Cors is set; servers call the runner, browsers do not")
		}
	}
	if len(fn.Events) != 0 {
		t.Errorf("function has events %v; the function URL is its only entry", slices.Collect(maps.Keys(fn.Events)))
	}
}

func TestEnvironment(t *testing.T) {
	v := load(t, templatePath, nil)
	want := map[string]string{
		"RUNNER_TOKEN_SECRET_ID": generatedSecret,
		"RUNNER_TOKENS":          "", // declared only so sam local --env-vars can set it
		"RUNNER_TIMEOUT_SECONDS": "300",
		"RUNNER_LOG_LEVEL":       "info",
		"RUNNER_MODELS":          "",
		// Distributed maps are off unless the operator sets a ceiling.
		"RUNNER_MAX_FANOUT_INVOCATIONS": "0",
	}
	if got := v.env(); !maps.Equal(got, want) {
		t.Errorf("Environment.Variables = %v\nwant %v", got, want)
	}
}

func TestTokenSecret(t *testing.T) {
	v := load(t, templatePath, nil)
	s, err := v.tmpl.GetSecretsManagerSecretWithName(secretID)
	if err != nil {
		t.Fatal(err)
	}
	if s.AWSCloudFormationCondition == "" {
		t.Fatal("the secret is unconditional; it must exist only without ExistingTokenSecretArn")
	}
	g := s.GenerateSecretString
	switch {
	case s.SecretString != nil:
		t.Error("the secret has a literal SecretString; it must be generated")
	case g == nil:
		t.Fatal("the secret has no GenerateSecretString")
	case g.PasswordLength == nil || *g.PasswordLength < 32:
		t.Errorf("PasswordLength = %v, want at least 32", deref(g.PasswordLength))
	case g.ExcludePunctuation == nil || !*g.ExcludePunctuation:
		t.Error("ExcludePunctuation is not true; punctuation needs quoting in headers and shells")
	case g.SecretStringTemplate != nil || g.GenerateStringKey != nil:
		t.Error("the generated value is a JSON document; want a plain token")
	}

	tests := []struct {
		existing string
		want     bool
	}{
		{"", true},
		{existingSecret, false},
	}
	for _, tt := range tests {
		v := load(t, templatePath, map[string]string{"ExistingTokenSecretArn": tt.existing})
		if got := v.r.condition(s.AWSCloudFormationCondition); got != tt.want {
			t.Errorf("ExistingTokenSecretArn=%q: secret created = %v, want %v", tt.existing, got, tt.want)
		}
	}
}

func TestPolicyScope(t *testing.T) {
	tests := []struct {
		name       string
		params     map[string]string
		wantSecret string
		bedrock    bool
	}{
		{"defaults", nil, generatedSecret, false},
		{"existing secret", map[string]string{"ExistingTokenSecretArn": existingSecret}, existingSecret, false},
		{"bedrock", map[string]string{"EnableBedrock": "true"}, generatedSecret, true},
		{"bedrock off", map[string]string{"EnableBedrock": "false"}, generatedSecret, false},
		{"fan-out", map[string]string{"MaxFanOutInvocations": "8"}, generatedSecret, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := load(t, templatePath, tt.params)

			for _, s := range v.statements() {
				if s["Effect"] != "Allow" {
					t.Errorf("statement %v: Effect %v", s["Sid"], s["Effect"])
				}
				for _, r := range strs(s["Resource"]) {
					if r == "*" || r == "" {
						t.Errorf("statement %v grants on Resource %q", s["Sid"], r)
					}
				}
				for _, a := range strs(s["Action"]) {
					if strings.Contains(a, "*") {
						t.Errorf("statement %v grants wildcard action %q", s["Sid"], a)
					}
				}
				if _, ok := s["NotResource"]; ok {
					t.Errorf("statement %v uses NotResource", s["Sid"])
				}
				if _, ok := s["NotAction"]; ok {
					t.Errorf("statement %v uses NotAction", s["Sid"])
				}
			}

			sm := v.granting("secretsmanager")
			if len(sm) != 1 {
				t.Fatalf("%d statements grant secretsmanager actions, want 1", len(sm))
			}
			if got := strs(sm[0]["Action"]); !slices.Equal(got, []string{"secretsmanager:GetSecretValue"}) {
				t.Errorf("secretsmanager actions = %q, want only GetSecretValue", got)
			}
			if got := strs(sm[0]["Resource"]); !slices.Equal(got, []string{tt.wantSecret}) {
				t.Errorf("GetSecretValue on %q, want exactly %q", got, tt.wantSecret)
			}
			if got := v.env()["RUNNER_TOKEN_SECRET_ID"]; got != tt.wantSecret {
				t.Errorf("RUNNER_TOKEN_SECRET_ID = %q, want the secret the policy grants, %q", got, tt.wantSecret)
			}

			// Distributed maps invoke the function itself, and nothing else.
			lm := v.granting("lambda")
			switch {
			case tt.params["MaxFanOutInvocations"] == "" && len(lm) != 0:
				t.Errorf("lambda granted with distributed maps off: %v", lm)
			case tt.params["MaxFanOutInvocations"] != "":
				if len(lm) != 1 || !slices.Equal(strs(lm[0]["Action"]), []string{"lambda:InvokeFunction"}) {
					t.Fatalf("lambda statements %v, want one granting InvokeFunction", lm)
				}
				for _, r := range strs(lm[0]["Resource"]) {
					if !strings.HasPrefix(r, "arn:aws:lambda:") || !strings.Contains(r, ":function:") || !strings.Contains(r, "-RunnerFunction-") {
						t.Errorf("lambda Resource %q is not the stack's own function", r)
					}
				}
			}

			br := v.granting("bedrock")
			if !tt.bedrock {
				if len(br) != 0 {
					t.Errorf("bedrock granted without EnableBedrock: %v", br)
				}
				return
			}
			if len(br) != 1 {
				t.Fatalf("%d statements grant bedrock actions, want 1", len(br))
			}
			got := strs(br[0]["Action"])
			slices.Sort(got)
			if want := []string{"bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"}; !slices.Equal(got, want) {
				t.Errorf("bedrock actions = %q, want %q", got, want)
			}
			res := strs(br[0]["Resource"])
			if len(res) == 0 {
				t.Error("bedrock statement has no Resource")
			}
			for _, r := range res {
				if !strings.HasPrefix(r, "arn:aws:bedrock:") ||
					!strings.Contains(r, ":foundation-model/") && !strings.Contains(r, "inference-profile/") {
					t.Errorf("bedrock Resource %q is not a model or inference profile ARN", r)
				}
			}
		})
	}
}

func TestLogGroup(t *testing.T) {
	v := load(t, templatePath, nil)
	if got := *v.logGroupFor(functionID); got != 30 {
		t.Errorf("RetentionInDays = %d, want the LogRetentionDays default 30", got)
	}
}

func TestOutputs(t *testing.T) {
	for _, existing := range []string{"", existingSecret} {
		v := load(t, templatePath, map[string]string{"ExistingTokenSecretArn": existing})
		// SAM names the function URL resource <function>Url.
		if got, want := v.output("RunnerUrl"), "<GetAtt "+functionID+"Url.FunctionUrl>"; got != want {
			t.Errorf("RunnerUrl = %q, want %q", got, want)
		}
		want := existing
		if want == "" {
			want = generatedSecret
		}
		if got := v.output("TokenSecretArn"); got != want {
			t.Errorf("ExistingTokenSecretArn=%q: TokenSecretArn = %q, want %q", existing, got, want)
		}
	}
}

func TestParameters(t *testing.T) {
	v := load(t, templatePath, nil)
	p := v.tmpl.Parameters
	num := func(f *float64) any {
		if f == nil {
			return "<unset>"
		}
		return *f
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"MemorySize default", str(p["MemorySize"].Default), "512"},
		{"Timeout default", str(p["Timeout"].Default), "300"},
		{"Timeout MaxValue", num(p["Timeout"].MaxValue), 900.0}, // Lambda's limit
		{"ReservedConcurrency default", str(p["ReservedConcurrency"].Default), "10"},
		{"ReservedConcurrency MinValue", num(p["ReservedConcurrency"].MinValue), 0.0},
		{"LogLevel default", str(p["LogLevel"].Default), "info"},
		{"LogRetentionDays default", str(p["LogRetentionDays"].Default), "30"},
		{"ExistingTokenSecretArn default", str(p["ExistingTokenSecretArn"].Default), ""},
		{"EnableBedrock default", str(p["EnableBedrock"].Default), "false"},
		{"EnableBedrock AllowedValues", fmt.Sprint(p["EnableBedrock"].AllowedValues), "[true false]"},
		{"DeploymentModels default", str(p["DeploymentModels"].Default), ""},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	for name, param := range p {
		if param.Description == nil || *param.Description == "" {
			t.Errorf("parameter %s has no Description (sam deploy --guided shows it)", name)
		}
		if param.AllowedValues != nil && !slices.Contains(param.AllowedValues, param.Default) {
			t.Errorf("parameter %s: default %v not among AllowedValues", name, param.Default)
		}
	}
}

// Every parameter must reach the function: set it to a value other than its
// default and watch the setting it drives change to that value.
func TestEveryParameterIsWired(t *testing.T) {
	models := `[{"role":"general","provider":"bedrock","model":"amazon.nova-lite-v1:0"}]`
	tests := []struct {
		param   string
		value   string
		observe func(v *view) string
		want    string
	}{
		{"MemorySize", "2048", func(v *view) string { return fmt.Sprint(deref(v.fn.MemorySize)) }, "2048"},
		{"Timeout", "900", func(v *view) string {
			return fmt.Sprint(deref(v.fn.Timeout), " ", v.env()["RUNNER_TIMEOUT_SECONDS"])
		}, "900 900"},
		{"ReservedConcurrency", "0", func(v *view) string {
			return fmt.Sprint(deref(v.fn.ReservedConcurrentExecutions))
		}, "<unset>"},
		{"LogLevel", "debug", func(v *view) string { return v.env()["RUNNER_LOG_LEVEL"] }, "debug"},
		{"LogRetentionDays", "90", func(v *view) string { return fmt.Sprint(*v.logGroupFor(functionID)) }, "90"},
		{"ExistingTokenSecretArn", existingSecret, func(v *view) string {
			sm := v.granting("secretsmanager")
			if len(sm) != 1 {
				return fmt.Sprintf("%d secretsmanager statements", len(sm))
			}
			return strings.Join([]string{
				v.env()["RUNNER_TOKEN_SECRET_ID"],
				strings.Join(strs(sm[0]["Resource"]), ","),
				v.output("TokenSecretArn"),
			}, " ")
		}, strings.Repeat(existingSecret+" ", 2) + existingSecret},
		{"EnableBedrock", "true", func(v *view) string {
			return fmt.Sprint(len(v.granting("bedrock")), " bedrock statements")
		}, "1 bedrock statements"},
		{"DeploymentModels", models, func(v *view) string { return v.env()["RUNNER_MODELS"] }, models},
		{"MaxFanOutInvocations", "20", func(v *view) string {
			return fmt.Sprint(v.env()["RUNNER_MAX_FANOUT_INVOCATIONS"], " ", len(v.granting("lambda")), " lambda statements")
		}, "20 1 lambda statements"},
		{"CostTag", "team-42", func(v *view) string { return v.fn.Tags["runner:cost-center"] }, "team-42"},
		{"DeploymentType", "Canary10Percent5Minutes", func(v *view) string {
			return fmt.Sprint(deref(v.fn.DeploymentPreference.Type))
		}, "Canary10Percent5Minutes"},
		{"EnableXRayTracing", "true", func(v *view) string { return fmt.Sprint(deref(v.fn.Tracing)) }, "Active"},
		{"FailedExecutionsThreshold", "12", func(v *view) string {
			return fmt.Sprint(deref(v.alarm("FailedExecutionsAlarm").Threshold), deref(v.alarm("CanaryFailedExecutionsAlarm").Threshold))
		}, "12 12"},
		{"UnauthorizedThreshold", "99", func(v *view) string { return fmt.Sprint(deref(v.alarm("UnauthorizedAlarm").Threshold)) }, "99"},
		{"PermissionsBoundaryArn", "arn:aws:iam::123456789012:policy/boundary", func(v *view) string {
			return fmt.Sprint(deref(v.fn.PermissionsBoundary))
		}, "arn:aws:iam::123456789012:policy/boundary"},
		{"AlarmEmail", "ops@example.com", func(v *view) string {
			var n int
			for _, a := range alarmNames {
				n += len(v.alarm(a).AlarmActions)
			}
			return fmt.Sprint(n, " alarm actions")
		}, fmt.Sprint(len(alarmNames), " alarm actions")},
	}

	defaults := load(t, templatePath, nil)
	tested := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.param, func(t *testing.T) {
			tested[tt.param] = true
			if got := tt.observe(defaults); got == tt.want {
				t.Fatalf("the default already gives %q: the check proves nothing", got)
			}
			v := load(t, templatePath, map[string]string{tt.param: tt.value})
			if got := tt.observe(v); got != tt.want {
				t.Errorf("%s=%s gives %q, want %q", tt.param, tt.value, got, tt.want)
			}
		})
	}
	// Wired only together with EnableBedrock: TestOpsBedrockRegions.
	tested["BedrockRegions"] = true
	for name := range defaults.tmpl.Parameters {
		if !tested[name] {
			t.Errorf("parameter %s has no wiring check", name)
		}
	}
	if t.Failed() {
		return
	}
	// ReservedConcurrency 0 means unreserved: the property is left out, not
	// set to 0 (which would stop the function).
	v := load(t, templatePath, map[string]string{"ReservedConcurrency": "0"})
	if v.fn.ReservedConcurrentExecutions != nil {
		t.Errorf("ReservedConcurrency=0 sets ReservedConcurrentExecutions=%d", *v.fn.ReservedConcurrentExecutions)
	}
}
