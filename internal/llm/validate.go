package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// schemaNode is the subset of JSON Schema that the reply schemas use: type
// (one or a list), enum, properties/required, items and anyOf. Validation
// checks that required fields exist with the right JSON kinds and enum
// values; it ignores extra fields, since a strict server never sends them and
// a lenient one sending a stray field is harmless.
type schemaNode struct {
	Type       typeList               `json:"type"`
	Enum       []any                  `json:"enum"`
	Properties map[string]*schemaNode `json:"properties"`
	Required   []string               `json:"required"`
	Items      *schemaNode            `json:"items"`
	AnyOf      []*schemaNode          `json:"anyOf"`
}

// typeList is JSON Schema's "type": a string or a list of strings.
type typeList []string

func (t *typeList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*t = typeList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("type: want a string or a list of strings: %w", err)
	}
	*t = many
	return nil
}

// compileSchema parses s for validation.
func compileSchema(s Schema) (*schemaNode, error) {
	if s.Name == "" {
		return nil, errors.New("schema has no name")
	}
	var n schemaNode
	if err := json.Unmarshal(s.Schema, &n); err != nil {
		return nil, fmt.Errorf("schema %s: %w", s.Name, err)
	}
	n.Required = slices.DeleteFunc(n.Required, func(name string) bool { return slices.Contains(s.Optional, name) })
	return &n, nil
}

// validate checks v (as decoded by encoding/json into any) against n.
func (n *schemaNode) validate(v any) error {
	return n.check(v, "")
}

func (n *schemaNode) check(v any, path string) error {
	if len(n.AnyOf) > 0 {
		var errs []string
		for _, alt := range n.AnyOf {
			err := alt.check(v, path)
			if err == nil {
				return nil
			}
			errs = append(errs, err.Error())
		}
		return fmt.Errorf("%s matches no alternative (%s)", describe(path), strings.Join(errs, "; "))
	}
	if len(n.Type) > 0 && !n.Type.allows(v) {
		return fmt.Errorf("%s: want %s, got %s", describe(path), strings.Join(n.Type, " or "), kindOf(v))
	}
	if len(n.Enum) > 0 && !inEnum(v, n.Enum) {
		return fmt.Errorf("%s: %s is not one of %s", describe(path), compact(v), compact(n.Enum))
	}
	switch v := v.(type) {
	case map[string]any:
		for _, name := range n.Required {
			if _, ok := v[name]; !ok {
				return fmt.Errorf("missing required field %q", join(path, name))
			}
		}
		for name, sub := range n.Properties {
			if fv, ok := v[name]; ok {
				if err := sub.check(fv, join(path, name)); err != nil {
					return err
				}
			}
		}
	case []any:
		if n.Items != nil {
			for i, item := range v {
				if err := n.Items.check(item, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (t typeList) allows(v any) bool {
	k := kindOf(v)
	for _, want := range t {
		if want == k {
			return true
		}
		if want == "integer" && k == "number" {
			if f, ok := v.(float64); ok && f == math.Trunc(f) {
				return true
			}
		}
	}
	return false
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64, json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func inEnum(v any, enum []any) bool {
	for _, e := range enum {
		// Enum values are scalars in our schemas, so == on the decoded values
		// is exact; the kind check guards against comparing maps or slices.
		if kindOf(e) == kindOf(v) && kindOf(v) != "object" && kindOf(v) != "array" && e == v {
			return true
		}
	}
	return false
}

func describe(path string) string {
	if path == "" {
		return "reply"
	}
	return fmt.Sprintf("field %q", path)
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
