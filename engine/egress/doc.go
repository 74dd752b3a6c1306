// Package egress guards every outbound connection of an execution: the
// HTTP client behind the workflow http node, and (Endpoints) the client of
// MCP toolsets and model providers.
//
// Workflows come from servers the runner does not control, so every request
// is treated as hostile until checked, in this order, on every hop (the first
// request and each redirect):
//
//  1. the URL: http or https only, no userinfo, a plain ASCII host;
//  2. the request's policy (runtime.http.policy): denyHosts beats allowHosts,
//     methods, maxRequests;
//  3. host-bound secrets: a request that carries a secret bound to other
//     hosts is refused, so a redirect can never walk a secret off-site;
//  4. the engine's permission gate (Request.Authorize);
//  5. the address actually dialled, after DNS: loopback, private, CGNAT
//     and other non-public addresses are refused unless the policy sets
//     allowPrivateNetwork or the operator admits them (Options.AllowPrefixes);
//     link-local and cloud metadata addresses and Options.Blocked (the
//     Lambda runtime API) are refused whatever anyone says.
//
// Endpoints applies the same dial-time guard to the endpoints the operator
// configures (MCP toolsets, model providers), which may reach private and
// loopback addresses but nothing on the "never" list. docs/security.md has
// the whole rule table.
//
// The address check sits in net.Dialer.Control, which runs after the socket
// is created and before it connects, for every address tried. Checking the
// host name instead would miss DNS names that resolve to internal addresses
// and DNS rebinding; checking after DNS but before dialling would race with
// a second lookup. Proxies from the environment are ignored because a proxy
// would hide the dialled address.
//
// Errors meant for the workflow are *Error values with code HTTP_BLOCKED
// (a rule refused the request) or HTTP_ERROR (transport, limits, decoding).
// Their messages name the method, host and URL path, never header values,
// query values or bodies, which may carry secrets.
package egress
