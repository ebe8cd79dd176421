package httpapi

import (
	"encoding/json"
	"fmt"

	"github.com/autocoder/autocoder/internal/schemas"
)

// openAPIDocument is openapi.json (the hand-written paths) with the JSON
// Schema of every message (internal/schemas, the same as docs/schemas)
// under components.schemas, where the paths refer to them.
func openAPIDocument() ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	components, _ := doc["components"].(map[string]any)
	defs, _ := components["schemas"].(map[string]any)
	if defs == nil {
		return nil, fmt.Errorf("openapi.json: no components.schemas")
	}
	for _, m := range schemas.Messages() {
		defs[m.Name] = schemas.Of(m)
	}
	return json.MarshalIndent(doc, "", "  ")
}
