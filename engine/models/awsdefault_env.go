//go:build awsenv

package models

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// defaultAWSConfig is the AWS configuration of Clients without a
// LoadAWSConfig. An awsenv build does not link the SDK's default chain
// (infra/awsconfig): its Clients are given their loader.
func defaultAWSConfig(context.Context) (aws.Config, error) {
	return aws.Config{}, errors.New("no AWS configuration loader: this awsenv build needs Clients.LoadAWSConfig")
}
