// Package toolsets connects an execution to the MCP servers of its
// runtime.toolsets, over the streamable HTTP transport of the official MCP Go
// SDK (github.com/modelcontextprotocol/go-sdk).
//
// The engine checks the definitions with [Validate] before accepting an
// execution, builds one [Set] per execution with [New], lists tools with
// [Set.Tools], calls them with [Set.Call] and releases everything with
// [Set.Close].
//
// # Sessions
//
// Each toolset gets one MCP session, opened on its first use (a workflow that
// never touches a toolset never dials it) and reused by every later call.
// Concurrent first uses share a single connect, which runs detached from any
// one caller, so a caller that gives up does not fail the others. The session
// does not open the optional standalone SSE stream: the runner only sends
// requests and reads their responses, so it needs no server-initiated
// messages, and an idle stream would hold a connection per toolset.
//
// # Broken sessions
//
// A session breaks when the server forgets it (HTTP 404 for its session id,
// after a restart for instance) or when the connection fails for good. A
// broken session is dropped and the next use opens a new one. Each toolset
// may open at most two sessions per Set, the first and one reconnect: that is
// enough to survive a server restart, while a server that keeps failing
// costs a bounded number of round trips, after which every use fails at once
// with [ErrUnavailable]. A failed connect counts against the same budget.
//
// A call whose request the server refused for an unknown session id was
// never run, so it is retried once on a new session; any other failure is
// returned to the caller, because a tool call that may have reached the
// server must not be repeated behind the engine's back. Plain transport
// errors (connection refused, reset, HTTP 5xx) fail the call but keep the
// session: the SDK keeps it usable, and a server that comes back with the
// same sessions is used again without a reconnect.
//
// # Closing
//
// Close cancels the operations in progress, aborts connects, ends every
// session with a DELETE (sent concurrently) and releases the Set's own HTTP
// connections; when it returns, nothing the Set started is left running.
// The SDK bounds each goodbye request to 5 s, so Close is bounded too, even
// against a server that never answers.
//
// A server ends a tool call only when it receives the call's
// notifications/cancelled: not when the HTTP request carrying the call
// ends, and not on the session's DELETE, which the SDK's server holds until
// the session's tools return. The SDK sends that notice from a goroutine
// as a call given up returns, and drops it once the session is closing, so
// Close first waits for the notice of every call given up (each must begin
// within 2 s); otherwise an execution that ends because its client left
// would leave every in-flight tool running its full course.
//
// # Errors and secrets
//
// Every failure is an [*Error] naming the toolset and tool. Toolset headers
// carry credentials (Authorization, API keys), so an Error's message never
// contains a header value, nor the query values of the toolset URL: they are
// scrubbed from the messages of the SDK, of net/http and of the server.
// Error unwraps to a sentinel ([ErrUnknownToolset], [ErrClosed],
// [ErrUnavailable], [ErrTimeout]), to context.Canceled or
// context.DeadlineExceeded when the caller's context ended, or to a scrubbed
// *jsonrpc.Error when the server answered with a JSON-RPC error.
package toolsets
