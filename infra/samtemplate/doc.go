// Package samtemplate holds no code: its tests check the SAM template at the
// repository root (template.yaml), the local-only API template and the
// events for sam local, so that a broken wiring between a parameter and the
// function, a widened IAM policy or a lost streaming setting fails go test
// instead of a deployment.
//
// The template is parsed with goformation, whose intrinsic-function handlers
// are replaced by ones that evaluate parameters and conditions as
// CloudFormation does but leave references to resources readable
// ("<Ref TokenSecret>"), so a test can tell what points where.
package samtemplate
