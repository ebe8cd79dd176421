package httpapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/autocoder/autocoder/internal/schemas"
)

// openAPIOps holds the paths of the operators' endpoints (ops.go), kept
// beside openapi.json so each file stays the description of its routes.
//
//go:embed openapi_ops.json
var openAPIOps []byte

// openAPIDocument is openapi.json (the hand-written paths) and
// openapi_ops.json, with the JSON Schema of every message (internal/schemas,
// the same as docs/schemas) under components.schemas, where the paths
// refer to them, and the error body (messages.HTTPError) as the content
// of every error answer that names no other.
func openAPIDocument() ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	components, _ := doc["components"].(map[string]any)
	defs, _ := components["schemas"].(map[string]any)
	paths, _ := doc["paths"].(map[string]any)
	if defs == nil || paths == nil {
		return nil, fmt.Errorf("openapi.json: no components.schemas or paths")
	}
	var ops map[string]any
	if err := json.Unmarshal(openAPIOps, &ops); err != nil {
		return nil, fmt.Errorf("openapi_ops.json: %w", err)
	}
	for p, item := range ops {
		if _, dup := paths[p]; dup {
			return nil, fmt.Errorf("openapi_ops.json: path %s is in openapi.json too", p)
		}
		paths[p] = item
	}
	for _, m := range schemas.Messages() {
		defs[m.Name] = schemas.Of(m)
	}
	errorBodies(paths)
	return json.MarshalIndent(doc, "", "  ")
}

// errorBodies gives every 4xx and 5xx answer without content the error
// body's schema: every route answers its errors with it (errors.go).
func errorBodies(paths map[string]any) {
	body := map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/HTTPError"}}}
	for _, item := range paths {
		ops, _ := item.(map[string]any)
		for _, op := range ops {
			o, _ := op.(map[string]any)
			responses, _ := o["responses"].(map[string]any)
			for code, resp := range responses {
				r, _ := resp.(map[string]any)
				if r != nil && r["content"] == nil && (strings.HasPrefix(code, "4") || strings.HasPrefix(code, "5")) {
					r["content"] = body
				}
			}
		}
	}
}
