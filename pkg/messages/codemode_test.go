package messages

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCodeModeValidate(t *testing.T) {
	t.Parallel()
	ok := func() JobSpec {
		return JobSpec{Mode: ModeCodeMode, CodeModeSpec: CodeModeSpec{Message: "hi", Tools: []string{"get_weather"}}}
	}
	tests := []struct {
		name  string
		edit  func(*JobSpec)
		field string
	}{
		{"valid", func(*JobSpec) {}, ""},
		{"valid with the options that apply", func(s *JobSpec) {
			s.Options = Options{Model: "m", Cache: CacheDisable, TokenBudget: 1000}
		}, ""},
		{"no message", func(s *JobSpec) { s.Message = " " }, "message"},
		{"prompt too", func(s *JobSpec) { s.Prompt = "x" }, "mode"},
		{"bad role", func(s *JobSpec) { s.History = []ChatMessage{{Role: "system", Content: "x"}} }, "history[0].role"},
		{"bad tool", func(s *JobSpec) { s.Tools = []string{"a.b"} }, "tools[0]"},
		{"tool twice", func(s *JobSpec) { s.Tools = []string{"a", "a"} }, "tools[1]"},
		{"empty skill", func(s *JobSpec) { s.Skills = []string{""} }, "skills[0]"},
		{"turns too many", func(s *JobSpec) { s.MaxTurns = MaxCodeModeTurns + 1 }, "max_turns"},
		{"negative retries", func(s *JobSpec) { s.MaxRetries = -1 }, "max_retries"},
		{"both", func(s *JobSpec) { s.MaxTurns, s.MaxRetries = 2, 2 }, "max_retries"},
		{"unknown mode", func(s *JobSpec) { s.Mode = "agentic" }, "mode"},
		{"fields without mode", func(s *JobSpec) { s.Mode = ""; s.Prompt = "x" }, "mode"},
		{"an option it ignores", func(s *JobSpec) { s.Options.MaxIterations = 3 }, "options.max_iterations"},
		{"resources", func(s *JobSpec) { s.Options.Resources.Memory = "1Gi" }, "options.resources"},
		{"bad cache", func(s *JobSpec) { s.Options.Cache = "sometimes" }, "options.cache"},
		{"negative token budget", func(s *JobSpec) { s.Options.TokenBudget = -1 }, "options.token_budget"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := ok()
			tt.edit(&s)
			err := s.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("valid spec refused: %v", err)
				}
				return
			}
			fe, isFE := err.(*FieldError)
			if !isFE || fe.Field != tt.field {
				t.Fatalf("err %v, want a FieldError on %s", err, tt.field)
			}
		})
	}
}

func TestCodeModeSpecJSON(t *testing.T) {
	t.Parallel()
	spec, err := DecodeJobSpecJSON([]byte(`{"mode": "codemode", "message": "hi", "history": [{"role": "user", "content": "before"}],
		"tools": ["a"], "skills": ["s"], "max_turns": 3, "system_prompt_prefix": "p"}`))
	if err != nil {
		t.Fatal(err)
	}
	if spec.Mode != ModeCodeMode || spec.Message != "hi" || spec.History[0].Content != "before" || spec.MaxTurns != 3 || spec.SystemPromptPrefix != "p" {
		t.Fatalf("spec %+v", spec)
	}
	_, err = DecodeJobSpecJSON([]byte(`{"mode": "codemode", "message": "hi", "history": [{"role": "user", "text": "x"}]}`))
	if err == nil || !strings.Contains(err.Error(), "text") {
		t.Fatalf("an unknown history field: %v", err)
	}
	// A pipeline spec encodes as before: no code-mode fields.
	b, err := json.Marshal(&JobSpec{Prompt: "p"})
	if err != nil || strings.Contains(string(b), "message") || strings.Contains(string(b), "mode") {
		t.Fatalf("pipeline spec JSON %s, %v", b, err)
	}
}
