package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestOpenAPIMatchesRoutes: every route Handler serves is in the OpenAPI
// document with its method, and the document has no operation that is
// not a route. A new endpoint without its description fails here.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	doc := servedOpenAPI(t)
	inDoc := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			inDoc[strings.ToUpper(method)+" "+path] = true
		}
	}
	inMux := map[string]bool{}
	for _, rt := range allRoutes() {
		inMux[strings.Replace(rt.pattern, "/{$}", "/", 1)] = true
	}
	for op := range inMux {
		if !inDoc[op] {
			t.Errorf("route %s is not in openapi.json", op)
		}
	}
	for op := range inDoc {
		if !inMux[op] {
			t.Errorf("openapi.json has %s, which no route serves", op)
		}
	}
}

// TestOpenAPIScopesMatchRoutes: the scope the document names for each
// operation is the one its route requires.
func TestOpenAPIScopesMatchRoutes(t *testing.T) {
	t.Parallel()
	doc := servedOpenAPI(t)
	for _, rt := range allRoutes() {
		method, path, _ := strings.Cut(strings.Replace(rt.pattern, "/{$}", "/", 1), " ")
		op := doc.Paths[path][strings.ToLower(method)]
		want := string(rt.scope)
		if rt.pattern == "GET /v1/jobs/{id}/events" {
			want = string(ScopeRead) // checked by the handler: a token or a ticket
		}
		if op.Scope != want {
			t.Errorf("%s: openapi.json says scope %q, the route requires %q", rt.pattern, op.Scope, want)
		}
	}
}

// TestOpenAPIRefsResolve: every component a path refers to is in the
// served document (the message schemas come from internal/schemas).
func TestOpenAPIRefsResolve(t *testing.T) {
	t.Parallel()
	doc := servedOpenAPI(t)
	b, err := json.Marshal(doc.Paths)
	if err != nil {
		t.Fatal(err)
	}
	const prefix = `"#/components/schemas/`
	for rest := string(b); strings.Contains(rest, prefix); {
		rest = rest[strings.Index(rest, prefix)+len(prefix):]
		name := rest[:strings.IndexByte(rest, '"')]
		if _, ok := doc.Components.Schemas[name]; !ok {
			t.Errorf("a path refers to components.schemas.%s, which is missing", name)
		}
	}
	if _, ok := doc.Components.Schemas["APIRequest"]; !ok {
		t.Error("the message schemas are not in components.schemas")
	}
}

type openAPIDoc struct {
	Paths map[string]map[string]struct {
		Scope string `json:"x-scope"`
	} `json:"paths"`
	Components struct {
		Schemas map[string]json.RawMessage `json:"schemas"`
	} `json:"components"`
}

// servedOpenAPI fetches /v1/openapi.json from a Handler, which serves it
// without a token.
func servedOpenAPI(t *testing.T) openAPIDoc {
	t.Helper()
	h := Handler(nil, nil, Options{})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/v1/openapi.json", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /v1/openapi.json: %d %s", rec.Code, rec.Body)
	}
	var doc openAPIDoc
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	return doc
}
