package engine

// A set or fail node does nothing but evaluate its with: a goroutine of its
// own (its stack grown to the depth of an attempt, two switches) costs more
// than the node. Such a node runs on the scheduler instead, when nothing in
// it can take long: no retry (a backoff would park the scheduler), and no
// expression that loops or scans (an `in` over a big array, a predicate).
// What remains costs time in proportion to its text, and the node's
// timeout and the expression budgets still apply, as for `when`, which
// already runs on the scheduler.

// RunsInline marks the node as one that may run on the scheduler rather
// than on a goroutine of its own, should its retry policy and with allow
// it: a node that does nothing but evaluate its with (see inlineable).
func (c *Compiler) RunsInline() { c.n.quick = true }

// inlineable reports whether n runs on the scheduler.
func (n *node) inlineable() bool {
	return n.quick && n.inner == nil && n.retry.MaxAttempts <= 1 && n.with.ConstantTime()
}
