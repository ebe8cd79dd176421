// Package llm is the model seam: a Client interface for structured calls
// (Contract 3 (docs/contracts.md)) and its OpenAI-compatible implementation on go-openai, with
// json_schema -> json_object fallback, retries with backoff on 429 and 5xx
// that honour Retry-After, and repair of fenced or truncated JSON. The reply
// schemas of Contract 3 (docs/contracts.md) are in schemas.go (PlanSchema, ..., SchemaByName).
//
//	c, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: os.Getenv("OPENAI_BASE_URL"), APIKey: key, Logger: log})
//	if err != nil { ... }
//	reply, err := c.Structured(ctx, llm.StructuredRequest{Model: "gpt-4.1", Messages: msgs, Schema: llm.PlanSchema})
//	if errors.Is(err, llm.ErrInvalidReply) { ... } // the model never produced a valid object
//	var plan messages.Plan
//	err = json.Unmarshal(reply.JSON, &plan)
//
// When a server refuses json_schema, the client sends json_object instead
// (then no response_format at all), with the schema in the system message on
// a line "Schema name: <name>", and remembers the refusal per model. The
// fake server in internal/fakellm routes requests by that line.
//
// Chat is the tool-calling call of the agent backend (Contract 7 (docs/contracts.md)), with the
// same retries; it is on *OpenAI, not on Client.
package llm
