package worker

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/dop251/goja"

	"github.com/runnerd/lambda-runner/engine/sandbox"
)

// maxMessage bounds the message of a thrown error.
const maxMessage = 2000

// errLogLimit interrupts code whose console output passed its bound.
var errLogLimit = errors.New("console output limit")

// Eval runs one request in a runtime of its own, made for it and dropped
// after: nothing one evaluation defines is seen by the next. The runtime
// has the language's built-ins and console.log, nothing else: no require,
// no timers, no I/O.
func Eval(req sandbox.Request) (rep sandbox.Reply) {
	vm := goja.New()
	vm.SetMaxCallStackSize(MaxCallStack)
	logs := &console{vm: vm, max: req.MaxLogBytes}
	defer func() {
		if p := recover(); p != nil {
			rep = sandbox.Reply{Error: recovered(p, logs), Logs: logs.lines}
		}
	}()
	c := vm.NewObject()
	for _, name := range []string{"log", "info", "warn", "error", "debug"} {
		_ = c.Set(name, logs.log)
	}
	_ = vm.Set("console", c)

	prg, err := goja.Compile("code", sandbox.Wrap(req.Code), false)
	if err != nil {
		return sandbox.Reply{Error: compileError(req.Code, err)}
	}
	fnv, err := vm.RunProgram(prg)
	if err != nil {
		return sandbox.Reply{Error: runError(err, logs)}
	}
	fn, _ := goja.AssertFunction(fnv)
	jsonObj := vm.Get("JSON").ToObject(vm)
	parse, _ := goja.AssertFunction(jsonObj.Get("parse"))
	stringify, _ := goja.AssertFunction(jsonObj.Get("stringify"))
	input := "null"
	if len(req.Input) > 0 {
		input = string(req.Input)
	}
	arg, err := parse(goja.Undefined(), vm.ToValue(input))
	if err != nil {
		return sandbox.Reply{Error: &sandbox.Error{Kind: sandbox.KindCrashed, Message: "the input is not JSON"}}
	}
	ret, err := fn(goja.Undefined(), arg)
	if err != nil {
		return sandbox.Reply{Error: runError(err, logs), Logs: logs.lines}
	}
	// Whether it is a promise is asked of its type alone: exporting a
	// value runs its getters and a proxy's traps, the author's code.
	if o, ok := ret.(*goja.Object); ok && o.ExportType() == promiseType {
		p := o.Export().(*goja.Promise)
		switch p.State() {
		case goja.PromiseStateFulfilled:
			ret = p.Result()
		case goja.PromiseStateRejected:
			return sandbox.Reply{Error: thrown(p.Result(), 0, 0), Logs: logs.lines}
		default:
			return sandbox.Reply{Error: &sandbox.Error{Kind: sandbox.KindThrown, Message: "the code returned a promise that did not settle (there are no timers or I/O to wait for)"}, Logs: logs.lines}
		}
	}
	js, err := stringify(goja.Undefined(), ret)
	if err != nil {
		return sandbox.Reply{Error: runError(err, logs), Logs: logs.lines}
	}
	out := "null" // undefined, a function, a symbol
	if !goja.IsUndefined(js) {
		out = js.String()
	}
	if int64(len(out)) > req.MaxOutputBytes && req.MaxOutputBytes > 0 {
		return sandbox.Reply{Error: &sandbox.Error{Kind: sandbox.KindOutput, Message: fmt.Sprintf("the return value is %d bytes of JSON, over maxOutputBytes (%d)", len(out), req.MaxOutputBytes)}, Logs: logs.lines}
	}
	return sandbox.Reply{Output: []byte(out), Logs: logs.lines}
}

var promiseType = reflect.TypeFor[*goja.Promise]()

// recovered says what a panic out of the engine was. The author's code
// runs wherever the engine reads a value (a getter, toJSON, a proxy's
// trap, toString), and what it throws there reaches Go as a panic of the
// thrown value: that is the code's error (CODE_ERROR), as a throw from
// its body is. Anything else is the engine's own fault.
func recovered(p any, logs *console) *sandbox.Error {
	switch p := p.(type) {
	case *goja.Exception:
		return thrown(p.Value(), 0, 0)
	case *goja.InterruptedError:
		return runError(p, logs)
	case *goja.StackOverflowError:
		return runError(p, logs)
	case goja.Value:
		return thrown(p, 0, 0)
	}
	return &sandbox.Error{Kind: sandbox.KindCrashed, Message: clip(fmt.Sprintf("internal error in the JavaScript engine: %v", p))}
}

// console collects what console.log writes, up to max bytes.
type console struct {
	vm    *goja.Runtime
	max   int64
	n     int64
	lines []string
}

func (c *console) log(call goja.FunctionCall) goja.Value {
	parts := make([]string, len(call.Arguments))
	for i, a := range call.Arguments {
		parts[i] = c.format(a)
	}
	line := strings.Join(parts, " ")
	c.n += int64(len(line)) + 1
	if c.max > 0 && c.n > c.max {
		// An interrupt, not an exception: the code cannot catch it and
		// go on logging.
		c.vm.Interrupt(errLogLimit)
		return goja.Undefined()
	}
	c.lines = append(c.lines, line)
	return goja.Undefined()
}

// format writes one argument as Node.js would, near enough: strings as
// they are, objects as JSON.
func (c *console) format(v goja.Value) string {
	if o, ok := v.(*goja.Object); ok {
		if _, fn := goja.AssertFunction(o); !fn {
			if b, err := o.MarshalJSON(); err == nil {
				return string(b)
			}
		}
	}
	return v.String()
}

// compileError locates a syntax error in the body.
func compileError(code string, err error) *sandbox.Error {
	var se *goja.CompilerSyntaxError
	if errors.As(err, &se) && se.File != nil {
		pos := se.File.Position(se.Offset)
		return sandbox.SyntaxError(code, clip(se.Message), pos.Line, pos.Column)
	}
	return &sandbox.Error{Kind: sandbox.KindThrown, Message: clip(err.Error())}
}

// runError says how a call failed: an exception the code threw, or a
// bound the worker enforces.
func runError(err error, logs *console) *sandbox.Error {
	var ex *goja.Exception
	var so *goja.StackOverflowError
	var ie *goja.InterruptedError
	switch {
	case errors.As(err, &so):
		return &sandbox.Error{Kind: sandbox.KindStack, Message: fmt.Sprintf("the call stack exceeded %d frames", MaxCallStack)}
	case errors.As(err, &ie) && ie.Value() == errLogLimit:
		return &sandbox.Error{Kind: sandbox.KindLogs, Message: fmt.Sprintf("console output exceeded %d bytes", logs.max)}
	case errors.As(err, &ex):
		line, col := 0, 0
		for _, f := range ex.Stack() {
			if f.SrcName() == "code" && f.Position().Line > 1 {
				line, col = f.Position().Line-1, f.Position().Column
				break
			}
		}
		return thrown(ex.Value(), line, col)
	}
	return &sandbox.Error{Kind: sandbox.KindThrown, Message: clip(err.Error())}
}

// thrown describes a thrown value: "TypeError: x is not a function" for
// an error, its text for anything else.
func thrown(v goja.Value, line, col int) *sandbox.Error {
	return &sandbox.Error{Kind: sandbox.KindThrown, Message: clip("Uncaught " + safeString(v)), Line: line, Column: col}
}

// safeString is v's text; a toString that throws gives a placeholder.
func safeString(v goja.Value) (s string) {
	defer func() {
		if recover() != nil {
			s = "(a value whose toString throws)"
		}
	}()
	if v == nil {
		return "undefined"
	}
	return v.String()
}

func clip(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return strings.ToValidUTF8(s[:maxMessage], "") + "…"
}
