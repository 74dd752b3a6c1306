package distribute

// This file is how a distributed map's children count against maxNodes.
//
// A child runs to its end whatever the parent does (Lambda does not stop
// an invocation whose caller went away), so what a child may start must be
// settled before it is invoked: each batch is given a share of what
// remains of the execution's maxNodes, reserved in the parent's count
// (Parent.Nodes) as it is sent, and the child fails its nodes past the
// share LIMIT_EXCEEDED as the execution would past maxNodes. At the
// batch's end what it did not use is given back. Every item sent counts at
// least one, nodes or none (an iteration whose nodes are all skipped still
// costs an invocation's share), so that the invocations a document can
// make, a map's retries included, are bounded by maxNodes too.

// nodeCount is one batch's part of the execution's node count.
type nodeCount struct {
	items     int64 // the batch's items: the least it is charged
	allowance int64 // reserved for it in Parent.Nodes: the child's ceiling
	started   int64 // first attempts the child's stream has shown
	reported  int64 // the nodes its end line says it started
	ended     bool  // its end line was read
}

// charge is what the batch costs of maxNodes once it is over: what it
// started, at least one an item; its whole allowance when its end never
// arrived, since the child may still be running.
func (c *nodeCount) charge() int64 {
	if !c.ended {
		return c.allowance
	}
	return min(c.allowance, max(c.items, c.started, c.reported))
}

// reserve takes a batch's allowance of maxNodes from what remains: the
// share of its items in the items still to send (remaining, its own
// included), no more than its iterations can start (perItem, when known)
// and no less than its items. It returns 0, reserving nothing, when what
// remains is less than its items.
func (p *Parent) reserve(items, remaining, perItem int64) int64 {
	limit := int64(p.MaxNodes)
	for {
		cur := p.Nodes.Load()
		free := limit - cur
		if free < items {
			return 0
		}
		a := free * items / max(1, remaining)
		if perItem > 0 {
			a = min(a, perItem*items)
		}
		a = max(a, items)
		if p.Nodes.CompareAndSwap(cur, cur+a) {
			return a
		}
	}
}

// settle gives back what a batch did not use of its allowance.
func (p *Parent) settle(c *nodeCount) {
	if back := c.allowance - c.charge(); back > 0 {
		p.Nodes.Add(-back)
	}
}
