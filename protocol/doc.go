// Package protocol holds Runner protocol v1 as it travels on the wire: the
// execution request and its validation, the capabilities document, every
// event and error body, and the NDJSON writer that frames events.
//
// It depends on the standard library only, so that the contract can be read
// (and tested) without the engine, Lambda or AWS in view.
package protocol

// Version is the only protocol version this package speaks.
const Version = 1

// Content types used on the wire.
const (
	ContentTypeJSON   = "application/json"
	ContentTypeNDJSON = "application/x-ndjson"
)

// Routes served by a runner.
const (
	PathCapabilities = "/v1/capabilities"
	PathExecutions   = "/v1/executions"
)
