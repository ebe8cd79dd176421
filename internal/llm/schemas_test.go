package llm

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/pkg/messages"
)

func allSchemas() []Schema {
	return []Schema{PlanSchema, SolutionSchema, TestsSchema, PackagesSchema, DiagnosisSchema,
		TestPatchesSchema, FixVerificationSchema, ConstraintSchema, PackageReplacementSchema}
}

func TestSchemaByName(t *testing.T) {
	t.Parallel()
	var names []string
	for _, s := range allSchemas() {
		got, ok := SchemaByName(s.Name)
		if !ok || got.Name != s.Name || string(got.Schema) != string(s.Schema) {
			t.Errorf("SchemaByName(%q) = %v, %v", s.Name, got.Name, ok)
		}
		names = append(names, s.Name)
	}
	want := []string{"plan", "solution", "tests", "packages", "diagnosis", "test_patches", "fix_verification", "constraint", "package_replacement"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("Contract 3 (docs/contracts.md) names (-want +got):\n%s", diff)
	}
	if _, ok := SchemaByName("nope"); ok {
		t.Error(`SchemaByName("nope") found a schema`)
	}
}

// Every schema must be accepted by OpenAI's strict mode: objects list all
// properties as required and forbid others; arrays say what they hold.
func TestSchemasStrictCompatible(t *testing.T) {
	t.Parallel()
	for _, s := range allSchemas() {
		var root map[string]any
		if err := json.Unmarshal(s.Schema, &root); err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		if root["type"] != "object" {
			t.Errorf("%s: root type = %v, want object", s.Name, root["type"])
		}
		if _, err := compileSchema(s); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
		walkSchema(t, s.Name, root)
	}
}

func walkSchema(t *testing.T, path string, node map[string]any) {
	t.Helper()
	if alts, ok := node["anyOf"].([]any); ok {
		for _, a := range alts {
			walkSchema(t, path+"|", a.(map[string]any))
		}
		return
	}
	types := typesOf(node["type"])
	if len(types) == 0 {
		t.Errorf("%s: no type", path)
	}
	if slices.Contains(types, "object") {
		props, _ := node["properties"].(map[string]any)
		if node["additionalProperties"] != false {
			t.Errorf("%s: additionalProperties must be false", path)
		}
		var keys, required []string
		for k, v := range props {
			keys = append(keys, k)
			walkSchema(t, path+"."+k, v.(map[string]any))
		}
		for _, r := range node["required"].([]any) {
			required = append(required, r.(string))
		}
		slices.Sort(keys)
		slices.Sort(required)
		if diff := cmp.Diff(keys, required); diff != "" {
			t.Errorf("%s: required must list every property (-properties +required):\n%s", path, diff)
		}
	}
	if slices.Contains(types, "array") {
		items, ok := node["items"].(map[string]any)
		if !ok {
			t.Errorf("%s: array without items", path)
			return
		}
		walkSchema(t, path+"[]", items)
	}
}

func typesOf(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, s := range v {
			out = append(out, s.(string))
		}
		return out
	}
	return nil
}

// The schemas must describe the JSON of the pkg/messages structs they decode
// into: same field names, arrays where the struct has slices, nested items
// for slices of structs.
func TestSchemasMatchMessageStructs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		schema Schema
		typ    reflect.Type
	}{
		{PlanSchema, reflect.TypeFor[messages.Plan]()},
		{SolutionSchema, reflect.TypeFor[messages.Solution]()},
		{TestsSchema, reflect.TypeFor[messages.Tests]()},
		{PackagesSchema, reflect.TypeFor[messages.Packages]()},
		{DiagnosisSchema, reflect.TypeFor[messages.Diagnosis]()},
		{TestPatchesSchema, reflect.TypeFor[messages.TestPatches]()},
		{FixVerificationSchema, reflect.TypeFor[messages.FixVerification]()},
	}
	for _, tt := range tests {
		var root map[string]any
		if err := json.Unmarshal(tt.schema.Schema, &root); err != nil {
			t.Fatal(err)
		}
		matchStruct(t, tt.schema.Name, root, tt.typ)
	}
}

func matchStruct(t *testing.T, path string, node map[string]any, typ reflect.Type) {
	t.Helper()
	props, _ := node["properties"].(map[string]any)
	fields := map[string]reflect.Type{}
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			fields[name] = f.Type
		}
	}
	var pk, fk []string
	for k := range props {
		pk = append(pk, k)
	}
	for k := range fields {
		fk = append(fk, k)
	}
	slices.Sort(pk)
	slices.Sort(fk)
	if diff := cmp.Diff(fk, pk); diff != "" {
		t.Errorf("%s: fields (-struct +schema):\n%s", path, diff)
		return
	}
	for name, ft := range fields {
		prop := props[name].(map[string]any)
		types := typesOf(prop["type"])
		switch ft.Kind() {
		case reflect.Slice:
			if !slices.Contains(types, "array") {
				t.Errorf("%s.%s: schema type %v, want array", path, name, types)
				continue
			}
			if ft.Elem().Kind() == reflect.Struct {
				matchStruct(t, path+"."+name+"[]", prop["items"].(map[string]any), ft.Elem())
			}
		case reflect.String:
			if !slices.Contains(types, "string") {
				t.Errorf("%s.%s: schema type %v, want string", path, name, types)
			}
		case reflect.Bool:
			if !slices.Contains(types, "boolean") {
				t.Errorf("%s.%s: schema type %v, want boolean", path, name, types)
			}
		}
	}
}

// TestPlannedSolutionSchema: the one-round solution reply is strict-mode
// compatible, and a reply that leaves the plan out, sets it to null or
// wraps the object in prose is taken; a plan of the wrong shape is not.
func TestPlannedSolutionSchema(t *testing.T) {
	t.Parallel()
	s := PlannedSolutionSchema
	var root map[string]any
	if err := json.Unmarshal(s.Schema, &root); err != nil {
		t.Fatal(err)
	}
	walkSchema(t, s.Name, root)
	n, err := compileSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	sol := `"language": "python", "code": "x = 1\n", "packages": [], "system_packages": []`
	for _, reply := range []string{
		`{"plan": {"description": "d", "approach": "a"}, ` + sol + `}`,
		`{"plan": null, ` + sol + `}`,
		`{` + sol + `}`,
		"Here is the plan and the code:\n```json\n{" + sol + ", \"plan\": {\"description\": \"d\", \"approach\": \"a\"}}\n```\nHope it helps.",
	} {
		if _, err := parseReply(reply, s.Name, n); err != nil {
			t.Errorf("%q: %v", reply, err)
		}
	}
	if _, err := parseReply(`{"plan": "just do it", `+sol+`}`, s.Name, n); err == nil {
		t.Error("a plan that is a string was taken")
	}
	if _, err := parseReply(`{"plan": null, "language": "python", "packages": [], "system_packages": []}`, s.Name, n); err == nil {
		t.Error("a reply without code was taken")
	}
}
