package messages

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Mode is the kind of job: the default pipeline (a tested script) or code
// mode (Contract 8: the model writes Python programs over tools).
type Mode string

// The job modes.
const (
	ModePipeline Mode = ""
	ModeCodeMode Mode = "codemode"
)

// The code-mode stages (Contract 8): describe the tools, a model turn, a
// program run.
const (
	StageCodeModeTools Stage = "codemode_tools" // sandbox pool: discover the tools over NATS
	StageCodeModeTurn  Stage = "codemode_turn"  // llm pool: one reply, with or without a program
	StageCodeModeExec  Stage = "codemode_exec"  // sandbox pool: run one program
)

// Bounds of a code-mode job.
const (
	MaxCodeModeTurns   = 50
	MaxCodeModeRetries = 10
	// DefaultCodeModeRetries is max_retries of a single-shot job that
	// sets neither max_turns nor max_retries.
	DefaultCodeModeRetries = 3
)

// CodeModeSpec is the code-mode part of a JobSpec, flat in it (mode:
// codemode, message, history, tools, ...). MaxTurns > 0 makes the job
// multi-turn; otherwise it is single-shot with MaxRetries.
type CodeModeSpec struct {
	Message string        `json:"message,omitempty"`
	History []ChatMessage `json:"history,omitempty"`
	// Tools are the tools' names, each either the name a tool is served
	// under or "alias=served_name" to show it to the program as alias.
	Tools    []string `json:"tools,omitempty"`
	Skills   []string `json:"skills,omitempty"` // texts (the CLI reads --skill-file into one)
	MaxTurns int      `json:"max_turns,omitempty"`
	// MaxRetries is the single-shot job's retries: nil (absent) means
	// DefaultCodeModeRetries, 0 no retry.
	MaxRetries         *int   `json:"max_retries,omitempty"`
	SystemPromptPrefix string `json:"system_prompt_prefix,omitempty"`
	// Interpreter runs the programs: python (the default: CPython in the
	// sandbox, the Python models write) or starlark (go.starlark.net in
	// the worker: faster to start, a smaller dialect).
	Interpreter Interpreter `json:"interpreter,omitempty"`
}

// Interpreter is what runs a code-mode job's programs.
type Interpreter string

// The interpreters.
const (
	InterpreterPython   Interpreter = "python"
	InterpreterStarlark Interpreter = "starlark"
)

// ToolRef is one entry of CodeModeSpec.Tools: the name the program calls
// (Alias) and the name the tool is served under (Served); equal when the
// entry has no alias.
type ToolRef struct{ Alias, Served string }

// ParseToolRef reads "name" or "alias=served_name".
func ParseToolRef(s string) (ToolRef, error) {
	alias, served, ok := strings.Cut(s, "=")
	if !ok {
		served = alias
	}
	if !toolNameRe.MatchString(alias) || !toolNameRe.MatchString(served) {
		return ToolRef{}, fmt.Errorf("%q is not a tool name (an identifier) or alias=served_name", s)
	}
	return ToolRef{Alias: alias, Served: served}, nil
}

func init() {
	// The code-mode fields are top-level fields of a job spec.
	known[""] = append(known[""], "mode", "message", "history", "tools", "skills", "max_turns", "max_retries", "system_prompt_prefix", "interpreter")
}

var toolNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// validateMode checks the mode and, for code mode, its fields; done
// reports that the spec is a code-mode job, whose checks end here.
func (s *JobSpec) validateMode() (done bool, err error) {
	switch s.Mode {
	case ModePipeline:
		if s.CodeModeSpec.set() {
			return true, &FieldError{"mode", "message, history, tools, skills, max_turns, max_retries, system_prompt_prefix and interpreter need mode: codemode"}
		}
		return false, nil
	case ModeCodeMode:
		return true, s.validateCodeMode()
	}
	return true, &FieldError{"mode", fmt.Sprintf("unsupported value %q (want codemode, or leave it out for the pipeline)", s.Mode)}
}

func (c CodeModeSpec) set() bool {
	return c.Message != "" || len(c.History) > 0 || len(c.Tools) > 0 || len(c.Skills) > 0 ||
		c.MaxTurns != 0 || c.MaxRetries != nil || c.SystemPromptPrefix != "" || c.Interpreter != ""
}

func (s *JobSpec) validateCodeMode() error {
	c := s.CodeModeSpec
	if strings.TrimSpace(c.Message) == "" {
		return &FieldError{"message", "is required for mode: codemode"}
	}
	if s.Prompt != "" || s.Schema != "" || len(s.Samples) > 0 || len(s.Inputs) > 0 || len(s.Outputs) > 0 || len(s.Constraints) > 0 {
		return &FieldError{"mode", "a codemode job takes message, not prompt, schema, constraints, samples, inputs or outputs"}
	}
	for i, m := range c.History {
		if m.Role != "user" && m.Role != "assistant" {
			return &FieldError{fmt.Sprintf("history[%d].role", i), fmt.Sprintf("unsupported value %q (want user or assistant)", m.Role)}
		}
	}
	seen := map[string]bool{}
	for i, t := range c.Tools {
		ref, err := ParseToolRef(t)
		if err != nil {
			return &FieldError{fmt.Sprintf("tools[%d]", i), err.Error()}
		}
		if seen[ref.Alias] {
			return &FieldError{fmt.Sprintf("tools[%d]", i), fmt.Sprintf("%q is listed twice", ref.Alias)}
		}
		seen[ref.Alias] = true
	}
	switch c.Interpreter {
	case "", InterpreterPython, InterpreterStarlark:
	default:
		return &FieldError{"interpreter", fmt.Sprintf("unsupported value %q (want python or starlark)", c.Interpreter)}
	}
	for i, sk := range c.Skills {
		if strings.TrimSpace(sk) == "" {
			return &FieldError{fmt.Sprintf("skills[%d]", i), "is empty"}
		}
	}
	switch {
	case c.MaxTurns < 0 || c.MaxTurns > MaxCodeModeTurns:
		return &FieldError{"max_turns", fmt.Sprintf("must be between 1 and %d", MaxCodeModeTurns)}
	case c.MaxRetries != nil && (*c.MaxRetries < 0 || *c.MaxRetries > MaxCodeModeRetries):
		return &FieldError{"max_retries", fmt.Sprintf("must be between 0 and %d", MaxCodeModeRetries)}
	case c.MaxTurns > 0 && c.MaxRetries != nil:
		return &FieldError{"max_retries", "is for single-shot jobs; a job with max_turns is multi-turn"}
	}
	return s.validateCodeModeSettings()
}

// validateCodeModeSettings checks context and the options of a code-mode
// job: those it ignores are refused, those it uses checked as for the
// pipeline.
func (s *JobSpec) validateCodeModeSettings() error {
	if len(s.Context) > 0 {
		return &FieldError{"context", "does not apply to mode: codemode (its turns carry skills, not documentation)"}
	}
	o := &s.Options
	for _, check := range []func() error{o.validateCodeModeOptions, o.validateChoices, o.validateModel, o.validateSandbox} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateCodeModeOptions refuses the options a code-mode job would ignore
// (about the generated script and its tests, or never read by its stages):
// model, cache, token_budget, sandbox_retries and the model's settings
// apply.
func (o *Options) validateCodeModeOptions() error {
	ignored := append([]optionSet{
		{"options.max_iterations", o.MaxIterations != 0},
		{"options.skip_tests", o.SkipTests},
		{"options.max_sample_rows", o.MaxSampleRows != 0},
		{"options.base_packages", len(o.BasePackages) > 0},
		{"options.timeout", o.Timeout != 0},
		{"options.resources", o.Resources != (Resources{})},
		{"options.backend", o.Backend != ""},
		{"options.candidates", o.Candidates != 0},
		{"options.first_pass", o.FirstPass != ""},
		{"options.validate", o.Validate != ""},
		{"options.agent_max_turns", o.AgentMaxTurns != 0},
		{"options.env_vars", len(o.EnvVars) > 0},
		{"options.secrets", len(o.Secrets) > 0},
		{"options.python", o.Python != ""},
		{"options.mutation", o.Mutation != ""},
	}, o.mutationTuning()...)
	if f := firstSet(ignored); f != "" {
		return &FieldError{f, "does not apply to mode: codemode (model, cache, token_budget, sandbox_retries and the model's settings do)"}
	}
	if o.TokenBudget < 0 {
		return &FieldError{"options.token_budget", "must not be negative"}
	}
	return nil
}

// optionSet is an option's field and whether a spec sets it.
type optionSet struct {
	field string
	set   bool
}

// firstSet is the field of the first option set, "" when none is.
func firstSet(opts []optionSet) string {
	for _, o := range opts {
		if o.set {
			return o.field
		}
	}
	return ""
}

// MultiTurn reports whether the job runs turns with observations.
func (c CodeModeSpec) MultiTurn() bool { return c.MaxTurns > 0 }

// Retries is the single-shot job's max_retries: DefaultCodeModeRetries
// when absent, 0 (no retry) when set so.
func (c CodeModeSpec) Retries() int {
	if c.MaxRetries == nil {
		return DefaultCodeModeRetries
	}
	return *c.MaxRetries
}

// ToolRefs are the job's tools, parsed (Validate has checked them; an
// entry that does not parse is left out).
func (c CodeModeSpec) ToolRefs() []ToolRef {
	refs := make([]ToolRef, 0, len(c.Tools))
	for _, t := range c.Tools {
		if r, err := ParseToolRef(t); err == nil {
			refs = append(refs, r)
		}
	}
	return refs
}

// CodeModeStep is one reply of the model and what came of it: the
// conversation of a code-mode job, rebuilt into messages by the turn stage.
type CodeModeStep struct {
	Reply string `json:"reply"` // the assistant's reply
	// Observation is what the program's run showed (multi-turn), or its
	// error (single-shot); empty with NoCode.
	Observation string `json:"observation,omitempty"`
	Failed      bool   `json:"failed,omitempty"`  // the program failed
	NoCode      bool   `json:"no_code,omitempty"` // single-shot: the reply had no program
	// Cut: the reply was cut short (the model's token limit, nothing
	// said, a code block never closed): neither an answer nor a program.
	Cut bool `json:"cut,omitempty"`
}

// CodeModeToolsInput asks for the descriptions of the job's tools (as
// CodeModeSpec.Tools: name or alias=served_name).
type CodeModeToolsInput struct {
	Tools []string `json:"tools"`
}

// CodeModeToolsOutput is the tools as the prompt shows them (JSON of
// codemode.Registry.ToolDescriptions).
type CodeModeToolsOutput struct {
	Descriptions json.RawMessage `json:"descriptions"`
}

// CodeModeTurnInput is one model turn: the system prompt's parts, the
// request, and the steps so far.
type CodeModeTurnInput struct {
	Tools              json.RawMessage `json:"tools"`
	Skills             []string        `json:"skills,omitempty"`
	SystemPromptPrefix string          `json:"system_prompt_prefix,omitempty"`
	MultiTurn          bool            `json:"multi_turn,omitempty"`
	Interpreter        Interpreter     `json:"interpreter,omitempty"` // the prompt's dialect rules; "" is python
	History            []ChatMessage   `json:"history,omitempty"`
	Message            string          `json:"message"`
	Steps              []CodeModeStep  `json:"steps,omitempty"`
}

// CodeModeTurnOutput is the model's reply: a program (Code, with the prose
// around it) or, with no code, the answer.
type CodeModeTurnOutput struct {
	Reply string `json:"reply"`
	Code  string `json:"code,omitempty"`
	Prose string `json:"prose,omitempty"`
	// Cut: the reply has no whole program and was cut short (see
	// CodeModeStep.Cut); it is asked for again, never taken for the answer.
	Cut bool `json:"cut,omitempty"`
}

// CodeModeExecInput runs one program with the job's tools.
type CodeModeExecInput struct {
	Code  string   `json:"code"`
	Tools []string `json:"tools"` // as CodeModeSpec.Tools: name or alias=served_name
	// Interpreter runs the program; "" is python.
	Interpreter Interpreter `json:"interpreter,omitempty"`
	// Scope keys the tool-call cache (the job id): a program run again in
	// the job does not call a tool twice with the same arguments.
	Scope string `json:"scope"`
}

// CodeModeExecOutput is a program's run.
type CodeModeExecOutput struct {
	OK          bool            `json:"ok"`
	Value       json.RawMessage `json:"value,omitempty"`
	Output      string          `json:"output,omitempty"`
	Error       string          `json:"error,omitempty"`
	ErrorKind   string          `json:"error_kind,omitempty"` // syntax, check, runtime, limit
	Observation string          `json:"observation"`          // for the model, within its budget
	// Uncacheable is set when the run called a tool marked non-cacheable:
	// the same program must run again, not be answered from the cache.
	Uncacheable bool `json:"uncacheable,omitempty"`
	// Files are what the program wrote under /var/outputs (Python only),
	// stored in the outputs object store; images are charts.
	Files []CodeModeFile `json:"files,omitempty"`
}

// CodeModeFile is a file a code-mode program wrote under /var/outputs.
type CodeModeFile struct {
	Name        string `json:"name"` // path relative to /var/outputs
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"`
	Object      string `json:"object,omitempty"` // sha256:<hex> in the outputs store, when stored
	ContentType string `json:"content_type"`
	Chart       bool   `json:"chart,omitempty"` // an image: shown as a chart
}

// Hermetic implements stagework.Hermetic: a run that called a
// non-cacheable tool is not stored.
func (o CodeModeExecOutput) Hermetic() bool { return !o.Uncacheable }

// CodeModeEvent is one step of a code-mode run, on its result.
type CodeModeEvent struct {
	Turn        int    `json:"turn"`
	Type        string `json:"type"` // code, observation, error, answer
	Code        string `json:"code,omitempty"`
	Observation string `json:"observation,omitempty"`
	Error       string `json:"error,omitempty"`
	Text        string `json:"text,omitempty"`
}

// CodeModeResult is the code-mode part of a job's result (Contract 8).
type CodeModeResult struct {
	Code    string          `json:"code"`
	Summary string          `json:"summary"`
	Value   json.RawMessage `json:"value"`
	Error   string          `json:"error,omitempty"`
	Turns   int             `json:"turns"`
	// Outputs are the files the last program that ran wrote under
	// /var/outputs, by name; Charts the images among them.
	Outputs []CodeModeFile  `json:"outputs"`
	Charts  []CodeModeFile  `json:"charts"`
	Events  []CodeModeEvent `json:"events"`
}

// MaxTurnsReason is a code-mode result's error when the turns ran out.
func MaxTurnsReason(maxTurns int) string {
	return fmt.Sprintf("max_turns reached: %d turns without a final answer (a reply with no code block)", maxTurns)
}

// MaxRetriesReason is a code-mode result's error when the retries ran out.
func MaxRetriesReason(attempts int, last string) string {
	return fmt.Sprintf("max_retries reached: no program succeeded in %d attempts; last error: %s", attempts, last)
}
