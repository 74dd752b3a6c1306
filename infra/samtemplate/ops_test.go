package samtemplate_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Bedrock calls are limited to the Regions the operator names, the stack's
// own by default.
func TestOpsBedrockRegions(t *testing.T) {
	tests := []struct{ regions, want string }{
		{"", "eu-west-1"},
		{"us-east-1,us-west-2", "us-east-1,us-west-2"},
	}
	for _, tt := range tests {
		v := load(t, templatePath, map[string]string{"EnableBedrock": "true", "BedrockRegions": tt.regions})
		if got := v.bedrockRegions(); got != tt.want {
			t.Errorf("BedrockRegions %q: condition %q, want %q", tt.regions, got, tt.want)
		}
	}
}

// Rollback needs a published version behind an alias, and the URL on the
// alias; gradual deployments are guarded by the alarms.
func TestOpsAliasAndDeployment(t *testing.T) {
	v := load(t, templatePath, nil)
	if got := deref(v.fn.AutoPublishAlias); got != "live" {
		t.Errorf("AutoPublishAlias = %v, want live (SAM then puts the function URL on the alias)", got)
	}
	if v.fn.FunctionUrlConfig == nil {
		t.Error("no FunctionUrlConfig")
	}
	dp := v.fn.DeploymentPreference
	if dp == nil || deref(dp.Type) != "AllAtOnce" || len(dp.Alarms) != 3 {
		t.Fatalf("DeploymentPreference %+v", dp)
	}
	if got := v.output("RunnerAlias"); got != "<Ref "+generatedAlias+">" {
		t.Errorf("RunnerAlias output %q", got)
	}
}

// A gradual deployment rolls back on the new version's own errors: every
// alarm CodeDeploy watches counts the version being deployed alone (its
// ExecutedVersion; Lambda's own metrics through the live alias), so the
// old version's errors during the shift roll nothing back.
func TestOpsCanaryAlarmsJudgeTheNewVersion(t *testing.T) {
	v := load(t, templatePath, map[string]string{"DeploymentType": "Canary10Percent5Minutes"})
	dp := v.fn.DeploymentPreference
	if dp == nil || len(dp.Alarms) == 0 {
		t.Fatal("no DeploymentPreference alarms")
	}
	const version = "<GetAtt RunnerFunction.Version.Version>"
	for _, ref := range dp.Alarms {
		name, ok := strings.CutPrefix(str(ref), "<Ref ")
		name = strings.TrimSuffix(name, ">")
		if !ok {
			t.Errorf("DeploymentPreference alarm %v is not a Ref to an alarm of the stack", ref)
			continue
		}
		a := v.alarm(name)
		dims := map[string]string{}
		for _, d := range a.Dimensions {
			dims[d.Name] = d.Value
		}
		if dims["FunctionName"] != "<Ref RunnerFunction>" || dims["ExecutedVersion"] != version {
			t.Errorf("%s: dimensions %v, want FunctionName and ExecutedVersion %s", name, dims, version)
		}
		if deref(a.Namespace) == "AWS/Lambda" && dims["Resource"] != "<Ref RunnerFunction>:live" {
			t.Errorf("%s: Lambda's ExecutedVersion dimension comes with Resource <function>:live, got %q", name, dims["Resource"])
		}
	}
	for _, want := range []string{"<Ref CanaryErrorsAlarm>", "<Ref CanaryFailedExecutionsAlarm>", "<Ref CanaryUnavailableAlarm>"} {
		found := false
		for _, ref := range dp.Alarms {
			found = found || str(ref) == want
		}
		if !found {
			t.Errorf("DeploymentPreference does not watch %s", want)
		}
	}
}

// Every alarm exists, notifies nobody without AlarmEmail, and has a
// runbook line in docs/deploy.md.
func TestOpsAlarmsAndRunbook(t *testing.T) {
	v := load(t, templatePath, nil)
	doc, err := os.ReadFile("../../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range alarmNames {
		a := v.alarm(name)
		if len(a.AlarmActions) != 0 {
			t.Errorf("%s notifies %v without AlarmEmail", name, a.AlarmActions)
		}
		if a.AlarmDescription == nil || !strings.Contains(*a.AlarmDescription, "Runbook") {
			t.Errorf("%s: description does not point at the runbook", name)
		}
		if !strings.Contains(string(doc), "**"+name+"**") {
			t.Errorf("docs/deploy.md has no runbook line for **%s**", name)
		}
	}
	if _, err := v.tmpl.GetCloudWatchDashboardWithName("RunnerDashboard"); err != nil {
		t.Error(err)
	}
	if _, err := v.tmpl.GetSNSTopicWithName("AlarmTopic"); err != nil {
		t.Error(err)
	}
}

// cfn-lint (what sam validate --lint runs) passes on the template.
func TestOpsCfnLint(t *testing.T) {
	if _, err := exec.LookPath("cfn-lint"); err != nil {
		t.Skip("cfn-lint not installed (make lint requires it)")
	}
	if testing.Short() {
		t.Skip("cfn-lint takes seconds")
	}
	out, err := exec.Command("cfn-lint", templatePath).CombinedOutput()
	if err != nil {
		t.Fatalf("cfn-lint: %v\n%s", err, out)
	}
}

// A plain `sam build` must stamp the commit's version: samconfig.toml builds
// in the checkout, where the Makefile reads it from git (docs/deploy.md).
func TestOpsSamBuildInSource(t *testing.T) {
	b, err := os.ReadFile("../../samconfig.toml")
	if err != nil {
		t.Fatal(err)
	}
	_, build, ok := strings.Cut(string(b), "[default.build.parameters]")
	if ok {
		build, _, _ = strings.Cut(build, "\n[")
	}
	if !ok || !strings.Contains(build, "\nbuild_in_source = true\n") {
		t.Error("samconfig.toml's [default.build.parameters] lacks build_in_source = true: a plain sam build would copy the tree without .git and report version dev")
	}
}
