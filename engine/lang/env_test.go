package lang

// testEnv is an Env of fixed values for the package's tests.
type testEnv struct {
	input   any
	exec    map[string]any
	nodes   map[string]testNode
	item    any
	index   int
	hasItem bool
}

// testNode is an ended node's state.
type testNode struct {
	status string
	output any
	err    map[string]any // {code, message}, or nil
}

func (e *testEnv) Input() any                { return e.input }
func (e *testEnv) Execution() map[string]any { return e.exec }

func (e *testEnv) Node(id string) (string, any, bool) {
	n, ok := e.nodes[id]
	if !ok || n.status == "" {
		return "", nil, false
	}
	return n.status, n.output, true
}

func (e *testEnv) State(id string) (map[string]any, bool) {
	n, ok := e.nodes[id]
	if !ok || n.status == "" {
		return nil, false
	}
	var errv any
	if n.err != nil {
		errv = n.err
	}
	return map[string]any{"status": n.status, "output": n.output, "error": errv}, true
}

func (e *testEnv) Item() (any, int, bool) { return e.item, e.index, e.hasItem }
