package awsconfig

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEnvBuildLinksNoDefaultChain: what the awsenv build is for — the
// Lambda bootstrap built with it links neither the SDK's config package
// nor the clients of its credential chain.
func TestEnvBuildLinksNoDefaultChain(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, tags := range []string{"lambda.norpc,awsenv", "lambda.norpc,awsenv,noopenai,noanthropic"} {
		out, err := exec.Command("go", "list", "-deps", "-tags", tags, "github.com/runnerd/lambda-runner/functions/runner").Output()
		if err != nil {
			t.Fatalf("go list: %v", err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 100 {
			t.Fatalf("go list -deps gave %d packages", len(deps))
		}
		for _, d := range deps {
			switch d {
			case "github.com/aws/aws-sdk-go-v2/config", "github.com/aws/aws-sdk-go-v2/service/sts",
				"github.com/aws/aws-sdk-go-v2/service/sso", "github.com/aws/aws-sdk-go-v2/service/ssooidc",
				"github.com/aws/aws-sdk-go-v2/service/signin":
				t.Errorf("the %s build links %s", tags, d)
			}
		}
	}
}
