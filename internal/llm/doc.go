// Package llm is the model seam: a Client interface for structured calls
// (Contract 3) and its OpenAI-compatible implementation on go-openai, with
// json_schema -> json_object fallback, retries with backoff on 429 and 5xx
// that honour Retry-After, and repair of fenced or truncated JSON.
//
//	c := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: os.Getenv("OPENAI_BASE_URL"), APIKey: key})
//	var plan messages.Plan
//	reply, err := c.Structured(ctx, llm.StructuredRequest{Model: "gpt-4.1", Messages: msgs, Schema: llm.PlanSchema})
//	err = json.Unmarshal(reply.JSON, &plan)
package llm
