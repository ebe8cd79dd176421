package fakellm_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/pkg/messages"
)

func call(t *testing.T, s *fakellm.Server, schema llm.Schema, user string) llm.StructuredReply {
	t.Helper()
	c, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: s.URL(), APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := c.Structured(context.Background(), llm.StructuredRequest{Model: "m", Schema: schema,
		Messages: []messages.ChatMessage{{Role: "system", Content: "You write Python."}, {Role: "user", Content: user}}})
	if err != nil {
		t.Fatalf("%s call: %v", schema.Name, err)
	}
	return reply
}

func structured(t *testing.T, s *fakellm.Server, schema llm.Schema, user string) messages.CodeOutput {
	t.Helper()
	var out messages.CodeOutput
	if err := json.Unmarshal(call(t, s, schema, user).JSON, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBook: the book answers each problem's calls by the key its prompt
// holds (the longest, so HumanEval/10 is not HumanEval/1), with the plan in
// one-round solutions except every OmitPlanEvery-th, and prose around
// every ProseEvery-th reply, which the real client reads all the same.
func TestBook(t *testing.T) {
	t.Parallel()
	s, _ := start(t)
	book := fakellm.NewBook(fakellm.Quirks{OmitPlanEvery: 2, ProseEvery: 2})
	book.Add(
		fakellm.Problem{Key: "HumanEval/1", Plan: messages.Plan{Description: "one", Approach: "a"}, Code: "def one(): return 1\n", Tests: "t1"},
		fakellm.Problem{Key: "HumanEval/10", Plan: messages.Plan{Description: "ten", Approach: "a"}, Code: "def ten(): return 10\n", Tests: "t10"},
	)
	s.Handle(book.Reply)
	first := structured(t, s, llm.PlannedSolutionSchema, "Task HumanEval/10: ...")
	second := structured(t, s, llm.PlannedSolutionSchema, "Task HumanEval/10: ...")
	if first.Code != "def ten(): return 10\n" || first.Plan == nil || first.Plan.Description != "ten" {
		t.Errorf("first one-round reply: %+v plan %+v", first.Solution, first.Plan)
	}
	if second.Plan != nil {
		t.Errorf("second one-round reply has plan %+v; every second one leaves it out", second.Plan)
	}
	if plain := structured(t, s, llm.SolutionSchema, "Task HumanEval/1: ..."); plain.Plan != nil || plain.Code != "def one(): return 1\n" {
		t.Errorf("plan-first solution reply: %+v plan %+v", plain.Solution, plain.Plan)
	}
	prose := 0
	for range 4 {
		if strings.HasPrefix(call(t, s, llm.TestsSchema, "HumanEval/1").Raw, "Here is") {
			prose++
		}
	}
	if prose != 2 {
		t.Errorf("%d of 4 replies in prose, want 2", prose)
	}
	if n := len(s.Requests()); n != 7 {
		t.Errorf("%d requests, want 7: a quirk cost a corrective round", n)
	}
	c, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: s.URL(), APIKey: "k", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Structured(context.Background(), llm.StructuredRequest{Model: "m", Schema: llm.TestsSchema,
		Messages: []messages.ChatMessage{{Role: "user", Content: "HumanEval/99"}}})
	if err == nil || !strings.Contains(err.Error(), "no problem") {
		t.Errorf("an unknown problem: err %v, want the book's 400", err)
	}
}

// TestTranscriptWritesThePlanWithTheCode: a played transcript answers a
// one-round code call with its scripted solution and its first plan.
func TestTranscriptWritesThePlanWithTheCode(t *testing.T) {
	t.Parallel()
	s, _ := start(t)
	tr, err := fakellm.LoadTranscript(strings.NewReader(`{"label": "scripted", "replies": {
		"plan": [{"description": "d", "approach": "a"}],
		"solution": [{"language": "python", "code": "x = 1\n", "packages": [], "system_packages": []}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	s.Play(tr)
	if out := structured(t, s, llm.PlannedSolutionSchema, "task"); out.Plan == nil || out.Plan.Approach != "a" || out.Code != "x = 1\n" {
		t.Errorf("one-round reply %+v plan %+v", out.Solution, out.Plan)
	}
	if out := structured(t, s, llm.SolutionSchema, "task"); out.Plan != nil {
		t.Errorf("a plan-first code call got a plan: %+v", out.Plan)
	}
}
