package codemodestages_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/codemodestages"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestTurnSendsTheJobsModelSettings: a code-mode turn sends the job's
// sampling settings and reply cap, and puts its system prompt and prefix
// in the system message, before the instructions that keep the reply's
// format (over the real OpenAI client, to the fake server).
func TestTurnSendsTheJobsModelSettings(t *testing.T) {
	t.Parallel()
	fake, model := programModel(t)
	h := mux(t, codemodestages.Config{Model: model})
	in, err := json.Marshal(messages.CodeModeTurnInput{Message: "one", SystemPromptPrefix: "Mode prefix."})
	if err != nil {
		t.Fatal(err)
	}
	temp, topP, seed := 0.2, 0.9, int64(7)
	cmd := &messages.StageCommand{V: messages.WireVersion, JobID: "job-1", Seq: 1, Stage: messages.StageCodeModeTurn, Cache: messages.CacheDisable,
		Model: "m", Input: in, Settings: &messages.StageSettings{Temperature: &temp, TopP: &topP, Seed: &seed, MaxTokens: 333,
			SystemPrompt: "You are a careful analyst.", SystemPromptPrefix: "Job prefix."}}
	if out := serve[messages.CodeModeTurnOutput](t, h, cmd); out.Code == "" {
		t.Fatalf("turn output %+v", out)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Temperature == nil || *r.Temperature != temp || r.TopP == nil || *r.TopP != topP || r.Seed == nil || *r.Seed != seed || r.MaxTokens != 333 {
		t.Errorf("sampling sent: temperature %v, top_p %v, seed %v, max tokens %d", r.Temperature, r.TopP, r.Seed, r.MaxTokens)
	}
	sys := r.Messages[0].Content
	if !strings.HasPrefix(sys, "Job prefix.\n\nMode prefix.\n\nYou are a careful analyst.\n\nYou answer the user's request") {
		t.Errorf("system message starts %q", sys[:min(len(sys), 160)])
	}
}
