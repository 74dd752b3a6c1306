// Package awsconfig loads the AWS configuration of the runner's AWS clients
// (Secrets Manager for tokens, Bedrock for models).
//
// A build without the awsenv tag uses the SDK's default chain
// (config.LoadDefaultConfig: environment, shared files and profiles, SSO,
// web identity, container and instance roles). The Lambda bootstrap is
// built with awsenv (make build; AWSCONFIG=full builds the default chain):
// it reads the environment Lambda provides (access keys, or a container
// credentials endpoint) and nothing else (FromEnvironment). The default
// chain's package links the SDK clients of SSO, SSO OIDC, sign-in and STS,
// whose package initialisation cost about 0.8 ms of every cold start
// (bench/BASELINE.md, round 3) for credentials Lambda never uses.
package awsconfig
