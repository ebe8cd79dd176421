package codemode

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// BindJSONArgs decodes a call's arguments sent as a JSON object and checks
// them against the tool's parameters: unknown names, missing required
// ones and declared types. Numbers come out as int64 or float64, the
// types a ToolFunc is promised: float64 for a float parameter even when
// the JSON wrote a whole number (100 for 100.0), int64 for an int one,
// which must fit in 64 bits. A parameter given as null is "not given".
// The messages are Python's style (the arguments of a Python program and
// of a served tool arrive this way).
func BindJSONArgs(t Tool, raw []byte) (map[string]any, error) {
	var args map[string]any
	if err := decodeJSON(raw, &args); err != nil || args == nil {
		return nil, fmt.Errorf("%s(): the arguments are not a JSON object", t.Name)
	}
	params := map[string]Param{}
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
		if !fitsJSON(p.Type, v) {
			return nil, fmt.Errorf("%s(): argument '%s' must be %s", t.Name, p.Name, p.Type)
		}
		if p.Type == TypeInt {
			if _, err := v.(json.Number).Int64(); err != nil {
				return nil, fmt.Errorf("%s(): argument '%s' is out of range for int", t.Name, p.Name)
			}
		}
		args[p.Name] = plainJSON(v, p.Type == TypeFloat)
	}
	return args, nil
}

func fitsJSON(t ParamType, v any) bool {
	switch t {
	case TypeStr:
		_, ok := v.(string)
		return ok
	case TypeInt:
		n, ok := v.(json.Number)
		return ok && !strings.ContainsAny(n.String(), ".eE")
	case TypeFloat:
		_, ok := v.(json.Number)
		return ok
	case TypeBool:
		_, ok := v.(bool)
		return ok
	case TypeList:
		_, ok := v.([]any)
		return ok
	case TypeDict:
		_, ok := v.(map[string]any)
		return ok
	}
	return false
}

// plainJSON turns json.Numbers into int64 or float64 (float64 throughout
// when asFloat, for a float parameter). Inside lists and dicts a number
// written with a point or an exponent (100.0) stays a float.
func plainJSON(v any, asFloat bool) any {
	switch x := v.(type) {
	case json.Number:
		if !asFloat && !strings.ContainsAny(x.String(), ".eE") {
			if i, err := x.Int64(); err == nil {
				return i
			}
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = plainJSON(x[i], false)
		}
	case map[string]any:
		for k := range x {
			x[k] = plainJSON(x[k], false)
		}
	}
	return v
}

// MarshalResult is the JSON of a tool's result (or arguments) with its
// floats kept floats: a whole float64 is written 100.0, not 100, so that
// it reaches a program (or a served tool) as a float, not an int. Floats
// inside a struct are written as encoding/json writes them.
func MarshalResult(v any) ([]byte, error) {
	return json.Marshal(keepFloats(v))
}

// keepFloats copies v's maps and lists with their float64s as
// json.Numbers that say they are floats.
func keepFloats(v any) any {
	switch x := v.(type) {
	case float64:
		return floatNumber(x, 64)
	case float32:
		return floatNumber(float64(x), 32)
	case []float64:
		out := make([]any, len(x))
		for i, f := range x {
			out[i] = floatNumber(f, 64)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = keepFloats(e)
		}
		return out
	case map[string]float64:
		out := make(map[string]any, len(x))
		for k, f := range x {
			out[k] = floatNumber(f, 64)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = keepFloats(e)
		}
		return out
	}
	return v
}

// floatNumber is f as JSON with a point or an exponent; NaN and the
// infinities stay float64, which encoding/json refuses.
func floatNumber(f float64, bits int) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return f
	}
	s := strconv.FormatFloat(f, 'g', -1, bits)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return json.Number(s)
}
