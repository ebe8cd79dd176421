package pyexec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/autocoder/autocoder/internal/codemode"
)

// bindArgs decodes a call's arguments and checks them against the tool's
// parameters, as the prelude did before sending them: the worker trusts
// nothing the program sends. Numbers come out as int64 or float64, the
// types a ToolFunc is promised.
func bindArgs(t codemode.Tool, raw json.RawMessage) (map[string]any, error) {
	var args map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&args); err != nil || args == nil {
		return nil, fmt.Errorf("%s(): the arguments are not a JSON object", t.Name)
	}
	params := map[string]codemode.Param{}
	for _, p := range t.Params {
		params[p.Name] = p
	}
	for name := range args {
		if _, ok := params[name]; !ok {
			return nil, fmt.Errorf("%s() got an unexpected keyword argument '%s'", t.Name, name)
		}
	}
	for _, p := range t.Params {
		v, ok := args[p.Name]
		if !ok || v == nil {
			delete(args, p.Name)
			if p.Required {
				return nil, fmt.Errorf("%s() missing required argument '%s'", t.Name, p.Name)
			}
			continue
		}
		if !fits(p.Type, v) {
			return nil, fmt.Errorf("%s(): argument '%s' must be %s", t.Name, p.Name, p.Type)
		}
		args[p.Name] = plain(v, p.Type == codemode.TypeFloat)
	}
	return args, nil
}

func fits(t codemode.ParamType, v any) bool {
	switch t {
	case codemode.TypeStr:
		_, ok := v.(string)
		return ok
	case codemode.TypeInt:
		n, ok := v.(json.Number)
		return ok && !strings.ContainsAny(n.String(), ".eE")
	case codemode.TypeFloat:
		_, ok := v.(json.Number)
		return ok
	case codemode.TypeBool:
		_, ok := v.(bool)
		return ok
	case codemode.TypeList:
		_, ok := v.([]any)
		return ok
	case codemode.TypeDict:
		_, ok := v.(map[string]any)
		return ok
	}
	return false
}

// plain turns json.Numbers into int64 or float64 (float64 throughout
// when asFloat, for a float parameter).
func plain(v any, asFloat bool) any {
	switch x := v.(type) {
	case json.Number:
		if !asFloat {
			if i, err := x.Int64(); err == nil {
				return i
			}
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = plain(x[i], false)
		}
	case map[string]any:
		for k := range x {
			x[k] = plain(x[k], false)
		}
	}
	return v
}
