// Package telemetry is the runner's observability on Lambda: log records
// that carry the Lambda request id, and one CloudWatch Embedded Metric
// Format (EMF) line per execution, which CloudWatch Logs turns into metrics
// with no agent, API call or extra permission.
//
// Neither ever holds a token, a request body or a secret: log records carry
// only what callers put in them, and metric lines only ids, a status and
// counts.
package telemetry
