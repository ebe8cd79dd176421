package codemode

import (
	"fmt"
	"slices"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Check parses code and runs the static check Run runs first, without
// running anything: every called name is a tool, a builtin or something
// the program defines, and each tool call's arguments fit the tool's
// parameters. The error is an *Error meant for the model.
func Check(code string, tools *Registry) error {
	f, err := fileOptions.Parse(fileName, code, 0)
	if err != nil {
		return syntaxError(err)
	}
	return checkFile(f, tools)
}

// builtinNames are the names the dialect adds to Starlark's universe.
var builtinNames = []string{"is_error", "parallel_map"}

// pythonKeywords are Python's keywords (and Starlark's load): a tool or a
// parameter so named could not be called (get(from="a") is a syntax
// error).
var pythonKeywords = []string{
	"False", "None", "True", "and", "as", "assert", "async", "await",
	"break", "class", "continue", "def", "del", "elif", "else", "except",
	"finally", "for", "from", "global", "if", "import", "in", "is",
	"lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try",
	"while", "with", "yield", "load",
}

// pythonBuiltinNames are the names a Python program finds defined: the
// builtins (Debian's CPython 3.11's, site's included) and the prelude's
// own. A tool so named would shadow them (a tool "sum" and the program's
// sum(...)).
var pythonBuiltinNames = []string{
	"ArithmeticError", "AssertionError", "AttributeError", "BaseException", "BaseExceptionGroup", "BlockingIOError", "BrokenPipeError", "BufferError",
	"BytesWarning", "ChildProcessError", "ConnectionAbortedError", "ConnectionError", "ConnectionRefusedError", "ConnectionResetError", "DeprecationWarning", "EOFError",
	"Ellipsis", "EncodingWarning", "EnvironmentError", "Exception", "ExceptionGroup", "False", "FileExistsError", "FileNotFoundError",
	"FloatingPointError", "FutureWarning", "GeneratorExit", "IOError", "ImportError", "ImportWarning", "IndentationError", "IndexError",
	"InterruptedError", "IsADirectoryError", "KeyError", "KeyboardInterrupt", "LookupError", "MemoryError", "ModuleNotFoundError", "NameError",
	"None", "NotADirectoryError", "NotImplemented", "NotImplementedError", "OSError", "OverflowError", "PendingDeprecationWarning", "PermissionError",
	"ProcessLookupError", "RecursionError", "ReferenceError", "ResourceWarning", "RuntimeError", "RuntimeWarning", "StopAsyncIteration", "StopIteration",
	"SyntaxError", "SyntaxWarning", "SystemError", "SystemExit", "TabError", "TimeoutError", "True", "TypeError",
	"UnboundLocalError", "UnicodeDecodeError", "UnicodeEncodeError", "UnicodeError", "UnicodeTranslateError", "UnicodeWarning", "UserWarning", "ValueError",
	"Warning", "ZeroDivisionError", "abs", "aiter", "all", "anext", "any", "ascii",
	"bin", "bool", "breakpoint", "bytearray", "bytes", "callable", "chr", "classmethod",
	"compile", "complex", "copyright", "credits", "delattr", "dict", "dir", "divmod",
	"enumerate", "eval", "exec", "exit", "filter", "float", "format", "frozenset",
	"getattr", "globals", "hasattr", "hash", "help", "hex", "id", "input",
	"int", "isinstance", "issubclass", "iter", "len", "license", "list", "locals",
	"map", "max", "memoryview", "min", "next", "object", "oct", "open",
	"ord", "pow", "print", "property", "quit", "range", "repr", "reversed",
	"round", "set", "setattr", "slice", "sorted", "staticmethod", "str", "sum",
	"super", "tuple", "type", "vars", "zip",
	"ToolError", "LimitExceeded", "parallel_map", "OUTPUTS",
}

// nameProblem says why a tool name cannot be used in either dialect, or
// "".
func nameProblem(name string) string {
	switch {
	case !isIdentifier(name):
		return "is not an identifier"
	case slices.Contains(pythonKeywords, name):
		return "is a Python keyword"
	case isBuiltinName(name) || slices.Contains(pythonBuiltinNames, name):
		return "shadows a builtin"
	}
	return ""
}

// paramNameProblem says why a parameter name cannot be used as a keyword
// argument in either dialect, or "".
func paramNameProblem(name string) string {
	switch {
	case !isIdentifier(name):
		return "is not an identifier"
	case slices.Contains(pythonKeywords, name):
		return "is a Python keyword"
	}
	return ""
}

func isBuiltinName(name string) bool {
	return starlark.Universe.Has(name) || strings.HasPrefix(name, "__") || slices.Contains(builtinNames, name)
}

type checker struct {
	tools   *Registry
	defined map[string]bool
	issues  []checkIssue
}

type checkIssue struct {
	pos syntax.Position
	msg string
}

func checkFile(f *syntax.File, tools *Registry) error {
	c := &checker{tools: tools, defined: map[string]bool{}}
	syntax.Walk(f, c.collectDefined)
	syntax.Walk(f, c.visit)
	if len(c.issues) == 0 {
		return nil
	}
	first := c.issues[0]
	msgs := make([]string, 0, len(c.issues))
	for i, is := range c.issues {
		if i == 0 {
			msgs = append(msgs, is.msg)
			continue
		}
		msgs = append(msgs, fmt.Sprintf("line %d: %s", is.pos.Line, is.msg))
	}
	return &Error{Kind: KindCheck, Line: int(first.pos.Line), Msg: strings.Join(msgs, "\n")}
}

func (c *checker) report(pos syntax.Position, format string, args ...any) {
	c.issues = append(c.issues, checkIssue{pos: pos, msg: fmt.Sprintf(format, args...)})
}

// collectDefined records every name the program binds anywhere (defs,
// assignments, loop variables, parameters). Scopes are ignored: the check
// is about typos in called names, and the resolver catches the rest.
func (c *checker) collectDefined(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.DefStmt:
		c.defined[n.Name.Name] = true
		c.bindParams(n.Params)
	case *syntax.LambdaExpr:
		c.bindParams(n.Params)
	case *syntax.AssignStmt:
		c.bindTarget(n.LHS)
	case *syntax.ForStmt:
		c.bindTarget(n.Vars)
	case *syntax.ForClause:
		c.bindTarget(n.Vars)
	}
	return true
}

func (c *checker) bindParams(params []syntax.Expr) {
	for _, p := range params {
		switch p := p.(type) {
		case *syntax.Ident:
			c.defined[p.Name] = true
		case *syntax.BinaryExpr:
			c.bindTarget(p.X)
		case *syntax.UnaryExpr:
			if p.X != nil {
				c.bindTarget(p.X)
			}
		}
	}
}

func (c *checker) bindTarget(e syntax.Expr) {
	switch t := e.(type) {
	case *syntax.Ident:
		c.defined[t.Name] = true
	case *syntax.TupleExpr:
		for _, x := range t.List {
			c.bindTarget(x)
		}
	case *syntax.ListExpr:
		for _, x := range t.List {
			c.bindTarget(x)
		}
	case *syntax.ParenExpr:
		c.bindTarget(t.X)
	}
}

func (c *checker) visit(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.LoadStmt:
		c.report(n.Load, "load() is not available: programs cannot import anything")
	case *syntax.Ident:
		if strings.HasPrefix(n.Name, "__") {
			c.report(n.NamePos, "names starting with __ are reserved (%s)", n.Name)
		}
	case *syntax.CallExpr:
		c.checkCall(n)
	}
	return true
}

func (c *checker) checkCall(call *syntax.CallExpr) {
	fn, ok := call.Fn.(*syntax.Ident)
	if !ok || c.defined[fn.Name] {
		return // a method, an aliased tool, or the program's own function
	}
	if t, isTool := c.tools.lookup(fn.Name); isTool {
		c.checkToolArgs(fn.NamePos, t, call.Args)
		return
	}
	if fn.Name == "parallel_map" {
		c.checkParallelMap(call)
	}
	if isBuiltinName(fn.Name) || strings.HasPrefix(fn.Name, "__") {
		return
	}
	msg := "unknown tool or function " + fn.Name
	if near := c.nearestTool(fn.Name); near != "" {
		msg += " (did you mean " + near + "?)"
	}
	c.report(fn.NamePos, "%s; known tools: %s", msg, c.knownTools())
}

// checkToolArgs checks a call's argument count and keyword names against
// the tool's parameters. Calls that spread *args or **kwargs are left to
// the run.
func (c *checker) checkToolArgs(pos syntax.Position, t *Tool, args []syntax.Expr) {
	positional, given := 0, map[string]bool{}
	for _, a := range args {
		switch a := a.(type) {
		case *syntax.UnaryExpr: // *args or **kwargs
			return
		case *syntax.BinaryExpr:
			if a.Op == syntax.EQ {
				c.checkKeyword(pos, t, a.X.(*syntax.Ident).Name, given)
				continue
			}
		}
		if positional < len(t.Params) {
			given[t.Params[positional].Name] = true
		}
		positional++
	}
	if positional > len(t.Params) {
		c.report(pos, "%s takes at most %d positional arguments, got %d; parameters: %s", t.Name, len(t.Params), positional, t.paramList())
	}
	for _, p := range t.Params {
		if p.Required && !given[p.Name] {
			c.report(pos, "%s: missing required argument %s; parameters: %s", t.Name, p.Name, t.paramList())
		}
	}
}

func (c *checker) checkKeyword(pos syntax.Position, t *Tool, name string, given map[string]bool) {
	if _, ok := t.param(name); !ok {
		c.report(pos, "%s has no parameter %s; parameters: %s", t.Name, name, t.paramList())
		return
	}
	if given[name] {
		c.report(pos, "%s: argument %s given twice", t.Name, name)
	}
	given[name] = true
}

// checkParallelMap checks a literal tool name and, when the calls are
// written out as dict literals, each call's keywords.
func (c *checker) checkParallelMap(call *syntax.CallExpr) {
	if len(call.Args) < 2 {
		return
	}
	var t *Tool
	switch fn := call.Args[0].(type) {
	case *syntax.Literal:
		name, _ := fn.Value.(string)
		var ok bool
		if t, ok = c.tools.lookup(name); !ok {
			c.report(fn.TokenPos, "parallel_map: unknown tool %q; known tools: %s", name, c.knownTools())
			return
		}
	case *syntax.Ident:
		t, _ = c.tools.lookup(fn.Name)
	}
	list, ok := call.Args[1].(*syntax.ListExpr)
	if t == nil || !ok {
		return
	}
	for _, item := range list.List {
		if d, isDict := item.(*syntax.DictExpr); isDict {
			c.checkKwargsDict(t, d)
		}
	}
}

func (c *checker) checkKwargsDict(t *Tool, d *syntax.DictExpr) {
	var args []syntax.Expr
	for _, e := range d.List {
		entry := e.(*syntax.DictEntry)
		key, ok := entry.Key.(*syntax.Literal)
		if !ok {
			return
		}
		name, isStr := key.Value.(string)
		if !isStr {
			return
		}
		args = append(args, &syntax.BinaryExpr{X: &syntax.Ident{Name: name}, Op: syntax.EQ, Y: entry.Value})
	}
	c.checkToolArgs(d.Lbrace, t, args)
}

func (c *checker) knownTools() string {
	names := c.tools.Names()
	if len(names) == 0 {
		return "(none)"
	}
	return strings.Join(names, ", ")
}

// nearestTool is the tool name within two edits of name, if any.
func (c *checker) nearestTool(name string) string {
	best, bestDist := "", 3
	for _, n := range c.tools.Names() {
		if d := editDistance(name, n); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
