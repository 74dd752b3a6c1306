//go:build !awsenv

package awsconfig

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// Source says where Load reads the configuration from.
const Source = "the AWS SDK's default chain"

// Load returns the AWS configuration of the SDK's default chain.
func Load(ctx context.Context) (aws.Config, error) {
	return config.LoadDefaultConfig(ctx)
}
