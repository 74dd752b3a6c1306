// Package document holds the workflow document as Go types: its strict
// one-pass decode (decode.go), the spec of its structure, from which
// docs/workflow.schema.json is generated (spec.go, with.go), the check
// that walks that spec (check.go, its state in rules.go), and the
// problems found, each with its path and, where a name looks misspelt, a
// "did you mean" (problems.go; the messages' wording in format.go).
//
// Parse is the entry: text in, a Document and its Problems out. The
// engine builds the graph and compiles the nodes from what it returns;
// this package knows nothing of either. It imports the standard library,
// protocol, engine/lang (whose problems it collects) and engine/schema
// (whose failures it reports) only.
package document
