package messages

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
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
		{"negative retries", func(s *JobSpec) { s.MaxRetries = ptr(-1) }, "max_retries"},
		{"both", func(s *JobSpec) { s.MaxTurns, s.MaxRetries = 2, ptr(2) }, "max_retries"},
		{"max_retries 0", func(s *JobSpec) { s.MaxRetries = ptr(0) }, ""},
		{"an alias", func(s *JobSpec) { s.Tools = []string{"weather=get_weather", "get_weather"} }, ""},
		{"a bad alias", func(s *JobSpec) { s.Tools = []string{"we ather=get_weather"} }, "tools[0]"},
		{"an alias twice", func(s *JobSpec) { s.Tools = []string{"w=get_weather", "w=other"} }, "tools[1]"},
		{"starlark", func(s *JobSpec) { s.Interpreter = InterpreterStarlark }, ""},
		{"unknown interpreter", func(s *JobSpec) { s.Interpreter = "lua" }, "interpreter"},
		{"unknown mode", func(s *JobSpec) { s.Mode = "agentic" }, "mode"},
		{"fields without mode", func(s *JobSpec) { s.Mode = ""; s.Prompt = "x" }, "mode"},
		{"an option it ignores", func(s *JobSpec) { s.Options.MaxIterations = 3 }, "options.max_iterations"},
		{"resources", func(s *JobSpec) { s.Options.Resources.Memory = "1Gi" }, "options.resources"},
		{"bad cache", func(s *JobSpec) { s.Options.Cache = "sometimes" }, "options.cache"},
		{"negative token budget", func(s *JobSpec) { s.Options.TokenBudget = -1 }, "options.token_budget"},
		// The settings its stages never read are refused, not dropped.
		{"env_vars", func(s *JobSpec) { s.Options.EnvVars = map[string]string{"A": "1"} }, "options.env_vars"},
		{"secrets", func(s *JobSpec) { s.Options.Secrets = []string{"TOKEN"} }, "options.secrets"},
		{"python", func(s *JobSpec) { s.Options.Python = "3.12" }, "options.python"},
		{"validate", func(s *JobSpec) { s.Options.Validate = ValidateRun }, "options.validate"},
		{"agent_max_turns", func(s *JobSpec) { s.Options.AgentMaxTurns = 5 }, "options.agent_max_turns"},
		{"mutation", func(s *JobSpec) { s.Options.Mutation = MutationOff }, "options.mutation"},
		{"min_test_strength", func(s *JobSpec) { s.Options.MinTestStrength = 0.5 }, "options.min_test_strength"},
		{"strengthen_rounds", func(s *JobSpec) { s.Options.StrengthenRounds = 1 }, "options.strengthen_rounds"},
		{"max_mutants", func(s *JobSpec) { s.Options.MaxMutants = 5 }, "options.max_mutants"},
		{"mutation_budget", func(s *JobSpec) { s.Options.MutationBudget = Duration(time.Minute) }, "options.mutation_budget"},
		{"context", func(s *JobSpec) { s.Context = []string{"docs/"} }, "context"},
		// What applies is checked as for the pipeline.
		{"the settings that apply", func(s *JobSpec) {
			s.Options = Options{Model: "m", SandboxRetries: 2, Temperature: ptr(0.5), TopP: ptr(0.9), Seed: ptr(int64(1)),
				MaxTokens: 100, SystemPrompt: "s", SystemPromptPrefix: "p"}
		}, ""},
		{"bad model", func(s *JobSpec) { s.Options.Model = "a model" }, "options.model"},
		{"sandbox_retries too many", func(s *JobSpec) { s.Options.SandboxRetries = MaxSandboxRetries + 1 }, "options.sandbox_retries"},
		{"temperature too high", func(s *JobSpec) { s.Options.Temperature = ptr(2.5) }, "options.temperature"},
		{"top_p zero", func(s *JobSpec) { s.Options.TopP = ptr(0.0) }, "options.top_p"},
		{"max_tokens negative", func(s *JobSpec) { s.Options.MaxTokens = -1 }, "options.max_tokens"},
		{"system_prompt not text", func(s *JobSpec) { s.Options.SystemPrompt = "a\x00b" }, "options.system_prompt"},
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

func ptr[T any](v T) *T { return &v }

// TestCodeModeMaxRetriesPresence: max_retries 0 is no retry, an absent
// max_retries the default; both survive the wire.
func TestCodeModeMaxRetriesPresence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		json string
		want int
	}{
		{`{"mode":"codemode","message":"m"}`, DefaultCodeModeRetries},
		{`{"mode":"codemode","message":"m","max_retries":0}`, 0},
		{`{"mode":"codemode","message":"m","max_retries":2}`, 2},
	} {
		var s JobSpec
		if err := json.Unmarshal([]byte(tc.json), &s); err != nil {
			t.Fatal(err)
		}
		again, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back JobSpec
		if err := json.Unmarshal(again, &back); err != nil {
			t.Fatal(err)
		}
		if got := back.Retries(); got != tc.want {
			t.Errorf("%s: Retries() = %d after a round trip (%s), want %d", tc.json, got, again, tc.want)
		}
	}
}

func TestParseToolRef(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]ToolRef{"get_weather": {"get_weather", "get_weather"}, "w=get_weather": {"w", "get_weather"}} {
		got, err := ParseToolRef(in)
		if err != nil || got != want {
			t.Errorf("ParseToolRef(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "=x", "x=", "a=b=c", "1x", "a.b"} {
		if _, err := ParseToolRef(bad); err == nil {
			t.Errorf("ParseToolRef(%q) accepted", bad)
		}
	}
}

// TestNormalisedSpecsValidate: a normalised spec (a result's, which the web
// UI's Rerun submits again) validates, and carries no default of a setting
// that does not apply to its kind of job.
func TestNormalisedSpecsValidate(t *testing.T) {
	t.Parallel()
	for name, spec := range map[string]JobSpec{
		"codemode":      {Mode: ModeCodeMode, CodeModeSpec: CodeModeSpec{Message: "hi", Tools: []string{"a"}}},
		"pipeline":      {Prompt: "p"},
		"candidates":    {Prompt: "p", Options: Options{Candidates: 3}},
		"skip_tests":    {Prompt: "p", Options: Options{SkipTests: true}},
		"validate: run": {Prompt: "p", Options: Options{Validate: ValidateRun}},
		"agent":         {Prompt: "p", Options: Options{Backend: BackendAgent}},
	} {
		if err := spec.Validate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		spec.Normalize("")
		if err := spec.Validate(); err != nil {
			t.Errorf("%s: the normalised spec is refused: %v", name, err)
		}
	}
	cm := JobSpec{Mode: ModeCodeMode, CodeModeSpec: CodeModeSpec{Message: "hi"}}
	cm.Normalize("m")
	if want := (Options{Model: "m", Cache: CacheAuto}); !reflect.DeepEqual(cm.Options, want) {
		t.Errorf("normalised code-mode options %+v, want only %+v", cm.Options, want)
	}
}

// TestStoredResultsRunAgain: a result stored when Normalize filled options
// that do not apply (its spec is what a run, a task and the web UI's Rerun
// submit again) reads back with a spec that validates.
func TestStoredResultsRunAgain(t *testing.T) {
	t.Parallel()
	old := Options{Model: "m", MaxIterations: DefaultMaxIterations, MaxSampleRows: DefaultMaxSampleRows, Cache: CacheAuto,
		Timeout: Duration(DefaultTimeout), Resources: Resources{CPU: 1, Memory: DefaultMemory}, Backend: BackendPipeline, Candidates: 1,
		Mutation: MutationOff, MinTestStrength: DefaultMinTestStrength, StrengthenRounds: DefaultStrengthenRounds,
		MaxMutants: DefaultMaxMutants, MutationBudget: Duration(DefaultMutationBudget)}
	with := func(edit func(*Options)) Options { o := old; edit(&o); return o }
	for name, spec := range map[string]JobSpec{
		"agent":         {Prompt: "p", Options: with(func(o *Options) { o.Backend, o.AgentMaxTurns = BackendAgent, DefaultAgentMaxTurns })},
		"skip_tests":    {Prompt: "p", Options: with(func(o *Options) { o.SkipTests, o.FirstPass = true, FirstPassOneRound })},
		"skip_tests, 3": {Prompt: "p", Options: with(func(o *Options) { o.SkipTests, o.Candidates, o.FirstPass = true, 3, FirstPassPlanFirst })},
		"validate: run": {Prompt: "p", Options: with(func(o *Options) { o.Validate = ValidateRun })},
		"codemode":      {Mode: ModeCodeMode, CodeModeSpec: CodeModeSpec{Message: "hi"}, Options: old},
	} {
		b, err := json.Marshal(Result{JobID: "j", Spec: &spec})
		if err != nil {
			t.Fatal(err)
		}
		var got Result
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if err := got.Spec.Validate(); err != nil {
			t.Errorf("%s: the stored spec is refused: %v", name, err)
		}
	}
}
