package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"go.starlark.net/starlark"
)

// ParamType is the type of a tool parameter as the program sees it.
type ParamType string

// The parameter types a tool may declare.
const (
	TypeStr   ParamType = "str"
	TypeInt   ParamType = "int"
	TypeFloat ParamType = "float"
	TypeBool  ParamType = "bool"
	TypeList  ParamType = "list"
	TypeDict  ParamType = "dict"
)

// Param describes one parameter of a tool.
type Param struct {
	Name     string    `json:"name"`
	Type     ParamType `json:"type"`
	Required bool      `json:"required"`
	Doc      string    `json:"doc,omitempty"`
}

// ToolFunc is the Go side of a tool. args holds the arguments the program
// passed, converted to JSON-able Go values (string, int64, float64, bool,
// []any, map[string]any) and checked against the declared types. The result
// must be JSON-able; an error reaches the program as an error value. A
// tool must return when ctx is done: that is how the wall-time limit
// reaches a call in progress.
type ToolFunc func(ctx context.Context, args map[string]any) (any, error)

// Tool is a Go function the program can call by name.
type Tool struct {
	Name   string
	Doc    string
	Params []Param
	Func   ToolFunc
	// NoCache marks a tool whose calls must not be answered from the
	// cache (CachedTools): one with effects, or whose answer changes.
	NoCache bool
}

// Registry holds the tools a program may call. It is safe for concurrent
// use once registration is over.
type Registry struct {
	tools map[string]*Tool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{tools: map[string]*Tool{}} }

// Register adds a tool. Names must be identifiers, unique, neither a
// Python keyword nor a builtin of Python (sum, open, ...), of Starlark or
// of the prelude (ToolError, parallel_map, ...); parameter names must be
// identifiers and not Python keywords (a parameter "from" could not be
// passed by name).
func (r *Registry) Register(t Tool) error {
	if why := nameProblem(t.Name); why != "" {
		return fmt.Errorf("codemode: tool name %q %s (of Python or Starlark); serve or alias it under another name", t.Name, why)
	}
	if _, dup := r.tools[t.Name]; dup {
		return fmt.Errorf("codemode: tool %q registered twice", t.Name)
	}
	if t.Func == nil {
		return fmt.Errorf("codemode: tool %q has no function", t.Name)
	}
	seen := map[string]bool{}
	for _, p := range t.Params {
		if why := paramNameProblem(p.Name); why != "" {
			return fmt.Errorf("codemode: tool %q: parameter name %q %s; rename the parameter", t.Name, p.Name, why)
		}
		if seen[p.Name] {
			return fmt.Errorf("codemode: tool %q: repeated parameter %q", t.Name, p.Name)
		}
		seen[p.Name] = true
		if !validType(p.Type) {
			return fmt.Errorf("codemode: tool %q: parameter %q has unknown type %q", t.Name, p.Name, p.Type)
		}
	}
	r.tools[t.Name] = &t
	return nil
}

// MustRegister is Register for setup code where a bad tool is a bug.
func (r *Registry) MustRegister(t Tool) {
	if err := r.Register(t); err != nil {
		panic(err)
	}
}

// Names returns the tool names, sorted.
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	names := make([]string, 0, len(r.tools))
	for n := range r.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (r *Registry) lookup(name string) (*Tool, bool) {
	if r == nil {
		return nil, false
	}
	t, ok := r.tools[name]
	return t, ok
}

// toolDescription is the JSON shape of one tool in ToolDescriptions.
type toolDescription struct {
	Name   string  `json:"name"`
	Doc    string  `json:"doc"`
	Params []Param `json:"params"`
}

// ToolDescriptions returns the tools as a JSON array of
// {name, doc, params: [{name, type, required, doc}]}, sorted by name, for
// the prompt.
func (r *Registry) ToolDescriptions() ([]byte, error) {
	descs := []toolDescription{}
	for _, n := range r.Names() {
		t := r.tools[n]
		params := t.Params
		if params == nil {
			params = []Param{}
		}
		descs = append(descs, toolDescription{Name: t.Name, Doc: t.Doc, Params: params})
	}
	return json.Marshal(descs)
}

func validType(t ParamType) bool {
	return slices.Contains([]ParamType{TypeStr, TypeInt, TypeFloat, TypeBool, TypeList, TypeDict}, t)
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// bindArgs matches a call's arguments to the tool's parameters, in the
// order of Params for positional ones, and checks types. Its errors are
// programming mistakes, so they stop the program.
func (t *Tool) bindArgs(args starlark.Tuple, kwargs []starlark.Tuple) (map[string]any, error) {
	if len(args) > len(t.Params) {
		return nil, fmt.Errorf("%s: takes at most %d positional arguments (%s), got %d", t.Name, len(t.Params), t.paramList(), len(args))
	}
	bound := map[string]starlark.Value{}
	for i, a := range args {
		bound[t.Params[i].Name] = a
	}
	for _, kv := range kwargs {
		name := string(kv[0].(starlark.String))
		if _, ok := t.param(name); !ok {
			return nil, fmt.Errorf("%s: unexpected keyword argument %q; parameters: %s", t.Name, name, t.paramList())
		}
		if _, dup := bound[name]; dup {
			return nil, fmt.Errorf("%s: argument %q given twice", t.Name, name)
		}
		bound[name] = kv[1]
	}
	out := make(map[string]any, len(bound))
	for _, p := range t.Params {
		v, ok := bound[p.Name]
		if !ok {
			if p.Required {
				return nil, fmt.Errorf("%s: missing required argument %q", t.Name, p.Name)
			}
			continue
		}
		gv, err := checkParam(p, v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.Name, err)
		}
		out[p.Name] = gv
	}
	return out, nil
}

func checkParam(p Param, v starlark.Value) (any, error) {
	ok := false
	switch p.Type {
	case TypeStr:
		_, ok = v.(starlark.String)
	case TypeInt:
		_, ok = v.(starlark.Int)
	case TypeFloat:
		switch v.(type) {
		case starlark.Int, starlark.Float:
			ok = true
		}
	case TypeBool:
		_, ok = v.(starlark.Bool)
	case TypeList:
		switch v.(type) {
		case *starlark.List, starlark.Tuple:
			ok = true
		}
	case TypeDict:
		_, ok = v.(*starlark.Dict)
	}
	if !ok {
		return nil, fmt.Errorf("argument %q must be %s, got %s", p.Name, p.Type, v.Type())
	}
	if i, isInt := v.(starlark.Int); isInt {
		switch p.Type {
		case TypeFloat:
			return float64(i.Float()), nil
		case TypeInt:
			if _, fits := i.Int64(); !fits {
				return nil, fmt.Errorf("argument %q is out of range for int", p.Name)
			}
		}
	}
	return toGo(v), nil
}

func (t *Tool) param(name string) (Param, bool) {
	for _, p := range t.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

func (t *Tool) paramList() string {
	parts := make([]string, 0, len(t.Params))
	for _, p := range t.Params {
		s := p.Name + ": " + string(p.Type)
		if !p.Required {
			s += " (optional)"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// call runs the tool's function, turning a panic into an error so that a
// faulty tool cannot take the interpreter down.
func (t *Tool) call(ctx context.Context, args map[string]any) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("tool panicked: %v", p)
		}
	}()
	return t.Func(ctx, args)
}

// toolValue is a tool as a Starlark value: callable, and storable in lists
// and dicts (so `t = {"f": tool}; t["f"](x=1)` dispatches).
type toolValue struct {
	tool *Tool
	run  *runState
}

var _ starlark.Callable = (*toolValue)(nil)

func (v *toolValue) String() string        { return "<tool " + v.tool.Name + ">" }
func (v *toolValue) Type() string          { return "tool" }
func (v *toolValue) Freeze()               {}
func (v *toolValue) Truth() starlark.Bool  { return true }
func (v *toolValue) Hash() (uint32, error) { return starlark.String(v.tool.Name).Hash() }
func (v *toolValue) Name() string          { return v.tool.Name }

func (v *toolValue) CallInternal(thread *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	goArgs, err := v.tool.bindArgs(args, kwargs)
	if err != nil {
		return nil, err
	}
	if err := v.run.countCalls(1); err != nil {
		return nil, err
	}
	res, err := v.tool.call(v.run.ctx, goArgs)
	v.run.stopIfDone(thread)
	return v.run.toolResult(v.tool.Name, res, err)
}

// errorValue is what a failed tool call returns to the program: falsy,
// recognised by is_error(x), with .message and .tool. Using it as if it
// were a result (indexing it) stops the program with the tool's message.
type errorValue struct {
	tool, message string
}

var (
	_ starlark.HasAttrs = (*errorValue)(nil)
	_ starlark.Mapping  = (*errorValue)(nil)
)

func (e *errorValue) String() string        { return fmt.Sprintf("error(%q)", e.message) }
func (e *errorValue) Type() string          { return "error" }
func (e *errorValue) Freeze()               {}
func (e *errorValue) Truth() starlark.Bool  { return false }
func (e *errorValue) Hash() (uint32, error) { return 0, errors.New("unhashable type: error") }
func (e *errorValue) AttrNames() []string   { return []string{"message", "tool"} }

func (e *errorValue) Attr(name string) (starlark.Value, error) {
	switch name {
	case "message":
		return starlark.String(e.message), nil
	case "tool":
		return starlark.String(e.tool), nil
	}
	return nil, nil
}

func (e *errorValue) Get(starlark.Value) (starlark.Value, bool, error) {
	return nil, false, fmt.Errorf("tool %s failed: %s (check is_error(result) before using a result)", e.tool, e.message)
}

// Tool returns a copy of the named tool, to register it elsewhere.
func (r *Registry) Tool(name string) (Tool, bool) {
	t, ok := r.lookup(name)
	if !ok {
		return Tool{}, false
	}
	return *t, true
}
