package document

import "strings"

// The rules of each node type's with (docs/workflow.schema.json), on the
// with as decoded.

// withRules are the node schema's allOf: each node type's with, and
// whether it is required.
var withRules = []struct {
	typ      string
	required bool
}{
	{"set", false}, {"fail", false}, {"map", true}, {"workflow", true},
	{"model", true}, {"agent", true}, {"tool", true}, {"http", true},
	{"code", true},
}

func (c *docChecker) with(typ string, v any) {
	switch typ {
	case "set":
		c.withSet(v)
	case "fail":
		c.withFail(v)
	case "map":
		c.withMap(v)
	case "workflow":
		c.withWorkflow(v)
	case "model":
		c.withModel(v)
	case "agent":
		c.withAgent(v)
	case "tool":
		c.withTool(v)
	case "http":
		c.withHTTP(v)
	case "code":
		c.withCode(v)
	}
}

func (c *docChecker) withCode(v any) {
	c.members(v, []string{"code"}, func(c *docChecker, k string, val any) bool {
		switch k {
		case "code":
			c.str(val)
		case "input":
		default:
			return false
		}
		return true
	})
}

func (c *docChecker) template(v any) {
	if s, ok := c.str(v); ok {
		c.pattern(s, templatePattern, strings.Contains(s, "${{"))
	}
}

func (c *docChecker) intOrTemplate(v any) {
	c.anyOf(v, func(c *docChecker, v any) { c.integer(v, decZero, nil) }, (*docChecker).template)
}

func (c *docChecker) numberOrTemplate(v any) {
	c.anyOf(v, func(c *docChecker, v any) { c.number(v, nil) }, (*docChecker).template)
}

func (c *docChecker) objectOrTemplate(v any) {
	c.anyOf(v, func(c *docChecker, v any) { c.object(v) }, (*docChecker).template)
}

// members checks an object: that it has the required members, check on
// each member, and that check knows every member. It returns the object
// and whether v is one.
func (c *docChecker) members(v any, required []string, check func(c *docChecker, k string, val any) bool) (map[string]any, bool) {
	m, ok := c.object(v)
	if !ok {
		return nil, false
	}
	c.required(m, required...)
	c.known(m, check)
	return m, true
}

// known runs check on each member of m, at its path, and reports the
// members check does not know as additional.
func (c *docChecker) known(m map[string]any, check func(c *docChecker, k string, val any) bool) {
	var extra []string
	for k, val := range m {
		c.push(k)
		if !check(c, k, val) {
			extra = append(extra, k)
		}
		c.pop()
	}
	c.additional(extra, check)
}

func (c *docChecker) withSet(v any) {
	c.members(v, nil, func(c *docChecker, k string, _ any) bool { return k == "value" })
}

func (c *docChecker) withFail(v any) {
	c.members(v, nil, func(c *docChecker, k string, val any) bool {
		switch k {
		case "message":
			c.str(val)
		case "code":
			if s, ok := c.str(val); ok {
				c.pattern(s, failCodePattern, isErrorCode(s) || strings.Contains(s, "${{"))
			}
		default:
			return false
		}
		return true
	})
}

func isErrorCode(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if b := s[i]; !(b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_') {
			return false
		}
	}
	return true
}

func (c *docChecker) withMap(v any) {
	c.members(v, []string{"items", "nodes"}, func(c *docChecker, k string, val any) bool {
		switch k {
		case "items":
			c.anyOf(val, func(c *docChecker, v any) { c.array(v) }, (*docChecker).template)
		case "concurrency":
			c.anyOf(val, func(c *docChecker, v any) { c.integer(v, decOne, nil) }, (*docChecker).template)
		case "nodes":
			c.nodes(val, true)
		case "output":
		case "distribute":
			c.withDistribute(val)
		default:
			return false
		}
		return true
	})
}

// withDistribute checks a map's distribute (engine/distribute.go).
func (c *docChecker) withDistribute(v any) {
	c.members(v, []string{"invocations"}, func(c *docChecker, k string, val any) bool {
		switch k {
		case "batchSize", "invocations":
			c.integer(val, decOne, nil)
		default:
			return false
		}
		return true
	})
}

func (c *docChecker) withWorkflow(v any) {
	c.members(v, []string{"workflow"}, func(c *docChecker, k string, val any) bool {
		switch k {
		case "workflow":
			c.strMin1(val)
		case "input":
		default:
			return false
		}
		return true
	})
}

// modelMember checks the members model and agent nodes share.
func (c *docChecker) modelMember(k string, val any) bool {
	switch k {
	case "role":
		c.strMin1(val)
	case "system", "prompt":
		c.str(val)
	case "messages":
		c.anyOf(val, (*docChecker).template, (*docChecker).messageList)
	case "temperature":
		c.numberOrTemplate(val)
	case "maxTokens":
		c.intOrTemplate(val)
	default:
		return false
	}
	return true
}

func (c *docChecker) messageList(v any) {
	if a, ok := c.array(v); ok {
		c.items(a, (*docChecker).message)
	}
}

func (c *docChecker) message(v any) {
	c.members(v, []string{"role", "content"}, func(c *docChecker, k string, val any) bool {
		switch k {
		case "role":
			c.enum(val, "user", "assistant")
		case "content":
			c.str(val)
		default:
			return false
		}
		return true
	})
}

func (c *docChecker) withModel(v any) {
	c.members(v, nil, func(c *docChecker, k string, val any) bool {
		if k == "json" {
			c.objectOrBool(val)
			return true
		}
		return c.modelMember(k, val)
	})
}

func (c *docChecker) withAgent(v any) {
	c.members(v, nil, func(c *docChecker, k string, val any) bool {
		switch k {
		case "toolsets", "tools":
			c.nameList(val)
		case "maxSteps":
			c.intOrTemplate(val)
		default:
			return c.modelMember(k, val)
		}
		return true
	})
}

func (c *docChecker) nameList(v any) {
	if a, ok := c.array(v); ok {
		c.items(a, (*docChecker).strMin1)
	}
}

func (c *docChecker) withTool(v any) {
	c.members(v, []string{"toolset", "tool"}, func(c *docChecker, k string, val any) bool {
		switch k {
		case "toolset", "tool":
			c.strMin1(val)
		case "arguments":
			c.objectOrTemplate(val)
		default:
			return false
		}
		return true
	})
}

func (c *docChecker) withHTTP(v any) {
	c.members(v, []string{"url"}, func(c *docChecker, k string, val any) bool {
		switch k {
		case "method":
			c.str(val)
		case "url":
			c.strMin1(val)
		case "query":
			c.objectOrTemplate(val)
		case "headers":
			c.anyOf(val, (*docChecker).stringMap, (*docChecker).template)
		case "body":
		case "timeoutMs":
			c.intOrTemplate(val)
		case "responseType":
			c.enum(val, "json", "text", "auto")
		case "failOnStatus":
			c.boolean(val)
		default:
			return false
		}
		return true
	})
}

func (c *docChecker) stringMap(v any) {
	m, ok := c.object(v)
	if !ok {
		return
	}
	for k, val := range m {
		c.push(k)
		c.str(val)
		c.pop()
	}
}
