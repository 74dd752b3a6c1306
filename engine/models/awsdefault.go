//go:build !awsenv

package models

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// defaultAWSConfig is the AWS configuration of Clients without a
// LoadAWSConfig: the SDK's default chain.
func defaultAWSConfig(ctx context.Context) (aws.Config, error) {
	return config.LoadDefaultConfig(ctx)
}
