// Package examples holds the example execution requests of this directory,
// embedded so that the local playground can offer them (functions/playground).
// Each file is a complete POST /v1/executions body; README.md describes them.
package examples

import "embed"

// FS holds the example requests, *.json, at its root.
//
//go:embed *.json
var FS embed.FS
