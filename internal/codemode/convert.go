package codemode

import (
	"encoding/json"
	"fmt"
	"sort"

	"go.starlark.net/starlark"
)

// toGo converts a Starlark value to a JSON-able Go value: None, bool,
// int64 (a string for ints beyond int64), float64, string, []any and
// map[string]any (non-string keys are written with str()). A failed tool
// call becomes {"error": message, "tool": name}; anything else its str().
func toGo(v starlark.Value) any {
	switch x := v.(type) {
	case starlark.NoneType:
		return nil
	case starlark.Bool:
		return bool(x)
	case starlark.Int:
		if i, ok := x.Int64(); ok {
			return i
		}
		return x.String()
	case starlark.Float:
		return float64(x)
	case starlark.String:
		return string(x)
	case starlark.Bytes:
		return string(x)
	case *starlark.List:
		return sequenceToGo(x)
	case starlark.Tuple:
		return sequenceToGo(x)
	case *starlark.Dict:
		out := make(map[string]any, x.Len())
		for _, kv := range x.Items() {
			key, ok := kv[0].(starlark.String)
			if !ok {
				key = starlark.String(kv[0].String())
			}
			out[string(key)] = toGo(kv[1])
		}
		return out
	case *errorValue:
		return map[string]any{"error": x.message, "tool": x.tool}
	}
	return v.String()
}

func sequenceToGo(s starlark.Indexable) []any {
	out := make([]any, s.Len())
	for i := range out {
		out[i] = toGo(s.Index(i))
	}
	return out
}

// fromGo converts a tool's JSON-able result to a Starlark value. Types it
// does not know go through encoding/json first, so a struct with json tags
// arrives as a dict.
func fromGo(v any) (starlark.Value, error) {
	switch x := v.(type) {
	case nil:
		return starlark.None, nil
	case bool:
		return starlark.Bool(x), nil
	case int:
		return starlark.MakeInt(x), nil
	case int64:
		return starlark.MakeInt64(x), nil
	case int32:
		return starlark.MakeInt64(int64(x)), nil
	case uint64:
		return starlark.MakeUint64(x), nil
	case float64:
		return starlark.Float(x), nil
	case float32:
		return starlark.Float(x), nil
	case json.Number:
		return fromJSONNumber(x)
	case string:
		return starlark.String(x), nil
	case []any:
		elems := make([]starlark.Value, len(x))
		for i, e := range x {
			sv, err := fromGo(e)
			if err != nil {
				return nil, err
			}
			elems[i] = sv
		}
		return starlark.NewList(elems), nil
	case map[string]any:
		return dictFromGo(x)
	}
	return viaJSON(v)
}

func dictFromGo(m map[string]any) (starlark.Value, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // a stable order for the program to iterate
	d := starlark.NewDict(len(m))
	for _, k := range keys {
		sv, err := fromGo(m[k])
		if err != nil {
			return nil, err
		}
		if err := d.SetKey(starlark.String(k), sv); err != nil {
			return nil, err
		}
	}
	return d, nil
}

func fromJSONNumber(n json.Number) (starlark.Value, error) {
	if i, err := n.Int64(); err == nil {
		return starlark.MakeInt64(i), nil
	}
	f, err := n.Float64()
	if err != nil {
		return nil, fmt.Errorf("number %q: %w", n, err)
	}
	return starlark.Float(f), nil
}

func viaJSON(v any) (starlark.Value, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("tool result of type %T is not JSON-able: %w", v, err)
	}
	var generic any
	if err := decodeJSON(raw, &generic); err != nil { // numbers as json.Number: 1 stays an int
		return nil, fmt.Errorf("tool result of type %T: %w", v, err)
	}
	return fromGo(generic)
}
