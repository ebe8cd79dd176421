package schemas_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/invopop/jsonschema"

	"github.com/autocoder/autocoder/internal/schemas"
)

var update = flag.Bool("update", false, "regenerate docs/schemas and comments.json from pkg/messages")

const (
	schemaDir   = "../../docs/schemas"
	messagesDir = "../../pkg/messages"
)

// TestSchemasUpToDate fails when a checked-in schema (or comments.json)
// differs from the Go types, or when docs/schemas has a file no message makes.
// Regenerate: go test ./internal/schemas -run TestSchemasUpToDate -update
func TestSchemasUpToDate(t *testing.T) {
	of := schemas.Of
	if *update {
		comments := writeComments(t)
		of = func(m schemas.Message) *jsonschema.Schema { return schemas.OfWith(m, comments) }
	}
	want := map[string][]byte{}
	for _, m := range schemas.Messages() {
		b, err := json.MarshalIndent(of(m), "", "  ")
		if err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		want[m.Name+".json"] = append(b, '\n')
	}
	if *update {
		if err := os.RemoveAll(schemaDir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(schemaDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range want {
			if err := os.WriteFile(filepath.Join(schemaDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	files, err := filepath.Glob(filepath.Join(schemaDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, ok := want[filepath.Base(f)]; !ok {
			t.Errorf("%s: no message has this schema (run with -update)", f)
		}
	}
	for name, b := range want {
		got, err := os.ReadFile(filepath.Join(schemaDir, name))
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("docs/schemas/%s differs from the Go types (run: go test ./internal/schemas -run TestSchemasUpToDate -update)", name)
		}
	}
}

// writeComments regenerates comments.json from pkg/messages' source (its
// non-test files only, from a copy so that the keys carry the import path).
func writeComments(t *testing.T) map[string]string {
	tmp := t.TempDir()
	dst := filepath.Join(tmp, "pkg", "messages")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range sourceFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(tmp)
	r := &jsonschema.Reflector{}
	if err := r.AddGoComments("github.com/autocoder/autocoder", "pkg/messages"); err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(r.CommentMap, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(here, "comments.json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(here)
	return r.CommentMap
}

func sourceFiles(t *testing.T) []string {
	files, err := filepath.Glob(filepath.Join(messagesDir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, "_test.go") })
}

// TestEveryMessageHasASchema: each exported struct of pkg/messages is a
// message with a schema, or listed as not one; a new message type without
// a schema fails here.
func TestEveryMessageHasASchema(t *testing.T) {
	t.Parallel()
	known := map[string]bool{}
	for _, m := range schemas.Messages() {
		known[m.Name] = true
	}
	for _, n := range schemas.NotMessages {
		known[n] = true
	}
	fset := token.NewFileSet()
	for _, f := range sourceFiles(t) {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				if _, isStruct := ts.Type.(*ast.StructType); isStruct && ts.Name.IsExported() && !known[ts.Name.Name] {
					t.Errorf("%s (%s): add it to schemas.messageValues (a message) or schemas.NotMessages", ts.Name.Name, filepath.Base(f))
				}
			}
		}
	}
}

// TestSchemasDescribeRequiredFields: a field without omitempty is
// required, one with it is not, and descriptions come from the Go comments.
func TestSchemasDescribeRequiredFields(t *testing.T) {
	t.Parallel()
	var req *jsonschema.Schema
	for _, m := range schemas.Messages() {
		if m.Name == "APIRequest" {
			req = schemas.Of(m)
		}
	}
	def := req.Definitions["APIRequest"]
	if def == nil {
		t.Fatalf("APIRequest schema has no APIRequest definition: %+v", req)
	}
	if !slices.Equal(def.Required, []string{"v"}) {
		t.Errorf("required %v, want [v]", def.Required)
	}
	if p, ok := def.Properties.Get("reply_to"); !ok || !strings.Contains(p.Description, "autocoder.replies") {
		t.Errorf("reply_to has no description from the Go comment: %+v", p)
	}
}
