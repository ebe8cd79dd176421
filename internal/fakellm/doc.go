// Package fakellm is a fake OpenAI-compatible chat completions server over
// real HTTP, for tests (the real go-openai client talks to it, as Fakes over
// mocks asks) and for the offline demo, where a scripted Transcript stands in
// for the model. It is not a test-only package: it imports no testing code.
//
// Requests are routed by schema name: response_format.json_schema.name, or,
// for json_object and plain requests, a "Schema name: <name>" line in a system
// message (the convention of internal/llm's fallback). Requests without one
// (plain chat, tool calls) have the name NoSchema.
//
//	s := fakellm.New()
//	defer s.Close()
//	s.On("plan", fakellm.JSON(messages.Plan{Description: "d", Approach: "a"}))
//	s.On("solution",
//		fakellm.Status(429, "1"),                      // rate limited, Retry-After: 1
//		fakellm.Text("```json\n{\"language\": ...}\n```"), // fenced
//	)
//	s.On(fakellm.NoSchema, fakellm.ToolCalls(fakellm.Call("run_tests", map[string]any{})))
//	c, _ := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: s.URL()})
//	...
//	reqs := s.Requests() // every request, with SchemaName, Format and Messages
//
// Replies queued with On are served in order and the last one repeats.
// Handle answers what no queue does. RefuseJSONSchema makes the server reject
// json_schema like servers without structured outputs do. Reply.Delay adds
// model latency for benchmarks; Reply.Usage sets token counts (by default
// characters/4).
//
// For evaluations, HumanEval is a model of a problem set (humaneval.go): it
// finds the problem a request quotes and answers every stage, with the
// canonical solutions, or with plausible but wrong ones (an off-by-one its
// weak tests miss, from the table humaneval_wrong.json) that it repairs once
// shown surviving mutants:
//
//	h, _ := fakellm.NewHumanEval(problems, fakellm.HumanEvalPlausibleWrong)
//	s.Handle(h.Reply)
//
// For the demo, a transcript file scripts the whole job:
//
//	t, err := fakellm.LoadTranscript(f) // {"label": "...", "replies": {"plan": [{...}], ...}}
//	s.Play(t)
package fakellm
