// Package engine runs workflow documents statelessly, inside the time and
// memory of one invocation.
//
// Prepare checks everything that can be checked before acceptance (the
// document against its JSON Schema, the graph, every expression, node
// configurations, runtime services, permissions) and returns an Execution;
// Execution.Run streams node events and exactly one terminal event to a
// Sink. Node types plug in through the Kind interface without touching the
// scheduler: the built-in ones that compose no graph live in engine/nodes,
// which registers them (RegisterKind) when a program imports it; map and
// workflow, which run graphs of their own, are the engine's.
package engine
