package protocol

// Capabilities is the body of GET /v1/capabilities: what this deployment can
// run. The server only delegates executions compatible with it, so every
// value must be true of the deployment, never aspirational.
type Capabilities struct {
	Version          int                 `json:"version"`
	ProtocolVersions []int               `json:"protocolVersions"`
	Runner           RunnerInfo          `json:"runner"`
	NodeTypes        []string            `json:"nodeTypes"`
	Runtime          RuntimeCapabilities `json:"runtime"`
	Streaming        Streaming           `json:"streaming"`
	Constraints      Constraints         `json:"constraints"`
}

// RunnerInfo names the implementation.
type RunnerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// RuntimeCapabilities lists the runtime services of the deployment.
type RuntimeCapabilities struct {
	Models           ModelCapabilities   `json:"models"`
	Toolsets         ToolsetCapabilities `json:"toolsets"`
	Workflows        bool                `json:"workflows"`
	HTTP             bool                `json:"http"`
	Checkpoints      bool                `json:"checkpoints"`
	PersistentValues bool                `json:"persistentValues"`
	// Consent is how consent is obtained: "suspend" (the execution ends
	// suspended and the server relaunches it with grants).
	Consent string `json:"consent"`
}

// ModelCapabilities lists the model providers and the roles of the
// deployment's own model table.
type ModelCapabilities struct {
	Providers []string `json:"providers"`
	Roles     []string `json:"roles"`
}

// ToolsetCapabilities lists the MCP transports spoken.
type ToolsetCapabilities struct {
	Transports []string `json:"transports"`
}

// Streaming describes the event stream.
type Streaming struct {
	ContentType string `json:"contentType"`
}

// Constraints are the limits an execution runs within, all enforced.
type Constraints struct {
	MaxDurationMs   int64 `json:"maxDurationMs"`
	MemoryMb        int   `json:"memoryMb"`
	MaxRequestBytes int64 `json:"maxRequestBytes"`
	MaxNodes        int   `json:"maxNodes"`
	MaxConcurrency  int   `json:"maxConcurrency"`
	MaxMapItems     int   `json:"maxMapItems"`
	MaxChildDepth   int   `json:"maxChildDepth"`
	MaxDepth        int   `json:"maxDepth"`       // nesting of a request body
	MaxSchemaDepth  int   `json:"maxSchemaDepth"` // nesting of an input JSON Schema
	MaxSchemaBytes  int   `json:"maxSchemaBytes"` // size of an input JSON Schema
	MaxExpressions  int   `json:"maxExpressions"` // `${{ }}` pieces and `when`s of one request
	MaxEventBytes   int   `json:"maxEventBytes"`
	// MaxStreamBytes bounds a streamed response's event stream,
	// MaxBufferedStreamBytes one a proxy buffers (counted JSON-escaped).
	MaxStreamBytes         int64 `json:"maxStreamBytes"`
	MaxBufferedStreamBytes int64 `json:"maxBufferedStreamBytes"`
	MaxOutputBytes         int64 `json:"maxOutputBytes"`
	MemoryBudget           int64 `json:"memoryBudgetBytes"`
	MaxExprSteps           int64 `json:"maxExprSteps"`       // steps of one expression evaluation
	MaxExprMemory          int64 `json:"maxExprMemoryBytes"` // bytes one evaluation may allocate
	// MaxFanOutInvocations is the most child invocations a distributed map
	// runs at once; 0: distribution is off.
	MaxFanOutInvocations int `json:"maxFanOutInvocations"`
	// A code node's with.code size, the memory of one evaluation and the
	// bytes its console.log may write.
	MaxCodeBytes    int   `json:"maxCodeBytes"`
	MaxCodeMemory   int64 `json:"maxCodeMemoryBytes"`
	MaxCodeLogBytes int64 `json:"maxCodeLogBytes"`
	// MaxExecutions is the most executions the runner process runs at
	// once; the next is refused with 503 UNAVAILABLE and Retry-After. 0:
	// the runner sets no bound of its own (under Lambda each execution is
	// an invocation of its own, and the function's concurrency bounds them).
	MaxExecutions int `json:"maxExecutions"`
}
