//go:build awsenv

package awsconfig

import (
	"context"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Source says where Load reads the configuration from.
const Source = "the environment only (the awsenv build)"

// Load returns the AWS configuration the environment gives (see
// FromEnvironment).
func Load(ctx context.Context) (aws.Config, error) {
	return FromEnvironment(os.LookupEnv)
}
