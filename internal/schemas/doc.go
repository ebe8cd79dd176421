// Package schemas makes the JSON Schemas of autocoder's wire messages
// (pkg/messages) from the Go types, with github.com/invopop/jsonschema.
// The generated files are checked in under docs/schemas (a test fails when
// they drift from the types: go test ./internal/schemas -update
// regenerates them), and the coordinator's OpenAPI document embeds them.
//
//	for _, m := range schemas.Messages() {
//		b, _ := json.MarshalIndent(schemas.Of(m), "", "  ")
//		os.WriteFile("docs/schemas/"+m.Name+".json", b, 0o644)
//	}
package schemas
