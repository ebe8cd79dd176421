package messages

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// SubmitJob is published to submit a job. Spec.Samples must be object
// references (sha256:<hex>[.ext]) of objects already in the samples object store.
//
// With Run set it is a run of a finished job's script on new data (submit
// run): Spec is ignored and the coordinator takes the script, its
// environment and the declared types from the job Run names.
type SubmitJob struct {
	V     int         `json:"v"`
	JobID string      `json:"job_id"`
	Spec  JobSpec     `json:"spec"`
	Run   *RunRequest `json:"run,omitempty"`
}

// JobStatus is where a job is.
type JobStatus string

const (
	StatusRunning   JobStatus = "running"
	StatusSucceeded JobStatus = "succeeded"
	StatusFailed    JobStatus = "failed"  // finished without passing tests (or bad input found late)
	StatusErrored   JobStatus = "errored" // infrastructure failure: a stage could not be done
	// StatusCancelled: stopped on request (CancelJob); the result's
	// Cancelled says who asked, when and why.
	StatusCancelled JobStatus = "cancelled"
)

// Statuses lists every job status, running first.
func Statuses() []JobStatus {
	return []JobStatus{StatusRunning, StatusSucceeded, StatusFailed, StatusErrored, StatusCancelled}
}

// Valid reports whether s is one of Statuses.
func (s JobStatus) Valid() bool { return slices.Contains(Statuses(), s) }

// EventType names a progress event.
type EventType string

const (
	EventJobStarted EventType = "job_started"
	// EventStageQueued: the coordinator dispatched a stage; it waits in
	// its pool's queue until a worker takes it.
	EventStageQueued EventType = "stage_queued"
	// EventStageStarted: a worker took the stage and started it (its
	// StageStarted notice). A stage answered from the cache goes from
	// queued to finished without it.
	EventStageStarted  EventType = "stage_started"
	EventStageFinished EventType = "stage_finished"
	EventJobFinished   EventType = "job_finished"
)

// Event is a progress event, published on the job's event subject.
type Event struct {
	V         int       `json:"v"`
	JobID     string    `json:"job_id"`
	Type      EventType `json:"type"`
	Stage     Stage     `json:"stage,omitempty"`
	Seq       int       `json:"seq,omitempty"`
	Iteration int       `json:"iteration,omitempty"`
	Cached    bool      `json:"cached,omitempty"`
	Outcome   string    `json:"outcome,omitempty"`
	Message   string    `json:"message,omitempty"`
	Success   *bool     `json:"success,omitempty"` // on job_finished
	Worker    string    `json:"worker,omitempty"`  // on stage_started: the worker that took the stage
	Time      time.Time `json:"time"`

	// Tool is the call on a tool_call event (the agent backend).
	Tool *ToolCallRecord `json:"tool,omitempty"`
}

// StageRecord is one stage on the result object.
type StageRecord struct {
	Name       Stage     `json:"name"`
	Seq        int       `json:"seq"`
	Iteration  int       `json:"iteration"`
	StartedAt  time.Time `json:"started_at"`
	DurationMS int64     `json:"duration_ms"`
	Cached     bool      `json:"cached"`
	Outcome    string    `json:"outcome"`
	Usage      Usage     `json:"usage"`
	Worker     string    `json:"worker,omitempty"` // the worker that did it
	// DispatchedAt is when the coordinator sent the stage to its pool, and
	// FinishedAt when the worker finished it (StartedAt plus DurationMS):
	// StartedAt minus DispatchedAt is the time it waited in the queue.
	// (The coordinator's and the worker's clocks.) Zero on older records.
	DispatchedAt time.Time `json:"dispatched_at,omitzero"`
	FinishedAt   time.Time `json:"finished_at,omitzero"`
}

// Result is the result object (Contract 5 (docs/contracts.md)).
type Result struct {
	V                      int               `json:"v"`
	JobID                  string            `json:"job_id"`
	Status                 JobStatus         `json:"status"`
	Success                bool              `json:"success"`
	Attempts               int               `json:"attempts"`
	Outputs                map[string]any    `json:"outputs"`
	Plan                   *Plan             `json:"plan" jsonschema:"nullable"` // null when the job has none (a one-round code reply may leave it out)
	Solution               *Solution         `json:"solution"`
	Tests                  string            `json:"tests"`
	Output                 string            `json:"output"`
	ExitCode               int               `json:"exit_code"`
	Error                  string            `json:"error"`
	Image                  string            `json:"image"`
	DetectedPackages       []string          `json:"detected_packages"`
	DetectedSystemPackages []string          `json:"detected_system_packages"`
	GeneratedSchemas       map[string]string `json:"generated_schemas"`
	DataContext            string            `json:"data_context"`
	TotalInputTokens       int               `json:"total_input_tokens"`
	TotalOutputTokens      int               `json:"total_output_tokens"`
	LLMCalls               int               `json:"llm_calls"`
	CacheHits              int               `json:"cache_hits"`
	Stages                 []StageRecord     `json:"stages"`
	ConversationHistory    []ChatMessage     `json:"conversation_history"`
	SkippedTests           bool              `json:"skipped_tests,omitempty"`
	Spec                   *JobSpec          `json:"spec,omitempty"`
	SubmittedAt            time.Time         `json:"submitted_at"`
	FinishedAt             *time.Time        `json:"finished_at,omitempty"`
	UsageByStage           map[Stage]Usage   `json:"usage_by_stage,omitempty"` // Usage summed per stage; cached stages cost nothing
	Notes                  []string          `json:"notes,omitempty"`          // why the loop did what it did (the most recent)
	ContextUsed            []StageContext    `json:"context_used,omitempty"`   // the context chunks each model stage was given
	Agent                  *AgentReport      `json:"agent,omitempty"`          // backend agent: the tool-call trace and summary
	CodeMode               *CodeModeResult   `json:"codemode,omitempty"`       // mode: codemode jobs (Contract 8)
	Cancelled              *Cancellation     `json:"cancelled,omitempty"`      // who cancelled the job and when (cancel.go)
	TestStrength           *StrengthReport   `json:"test_strength,omitempty"`  // the tests' strength by mutation (strength.go)
	// OriginalSamples are the samples the job was generated from (a run's:
	// the samples it ran on), in the samples object store, by name.
	OriginalSamples []SampleRef `json:"original_samples,omitempty"`
	// TotalCost is the price of the job's model calls, from the model
	// table's prices, in the table's currency; CostByModel splits it (and
	// the tokens) by model. Cached stages cost nothing.
	TotalCost   float64              `json:"total_cost"`
	CostByModel map[string]ModelCost `json:"cost_by_model,omitempty"`
}

// UnmarshalJSON reads a stored result, whose spec an older Normalize may
// have filled with options Validate now refuses (JobSpec.dropUnapplied).
func (r *Result) UnmarshalJSON(b []byte) error {
	type plain Result
	if err := json.Unmarshal(b, (*plain)(r)); err != nil {
		return err
	}
	if r.Spec != nil {
		r.Spec.dropUnapplied()
	}
	return nil
}

// ModelCost is what one model's calls of a job used and cost.
type ModelCost struct {
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	Calls        int     `json:"calls"`
	Cost         float64 `json:"cost"`
}

// DecodeJobSpecJSON decodes a JSON JobSpec strictly: unknown fields and wrong
// types are errors that name the field (as *FieldError). It validates the spec.
func DecodeJobSpecJSON(data []byte) (*JobSpec, error) {
	if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return nil, &FieldError{"", "job spec is not UTF-8 text"}
	}
	var raw any
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, &FieldError{"", "malformed JSON: " + err.Error()}
	}
	if err := CheckKnownFields(raw); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var spec JobSpec
	if err := dec.Decode(&spec); err != nil {
		return nil, jsonFieldError(err, raw)
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return &spec, nil
}

// known lists the fields of each object in a JobSpec, by dotted path.
var known = map[string][]string{
	"": {"name", "prompt", "schema", "constraints", "samples", "inputs", "outputs", "options", "context"},
	"options": {"model", "max_iterations", "skip_tests", "max_sample_rows", "base_packages", "cache", "timeout", "resources", "backend", "candidates", "token_budget", "validate", "agent_max_turns",
		"temperature", "max_tokens", "top_p", "seed", "system_prompt", "system_prompt_prefix",
		"env_vars", "secrets", "python", "sandbox_retries",
		"mutation", "min_test_strength", "strengthen_rounds", "max_mutants", "mutation_budget", "first_pass"},
	"options.resources": {"cpu", "memory"},
}

// CheckKnownFields walks a generic decoded spec (maps from JSON or YAML) and
// reports the first unknown field or object of the wrong kind, by path.
func CheckKnownFields(raw any) error {
	top, ok := raw.(map[string]any)
	if !ok {
		return &FieldError{"", fmt.Sprintf("job spec must be a mapping of fields, not %s", kindOf(raw))}
	}
	var walk func(path string, m map[string]any) error
	walk = func(path string, m map[string]any) error {
		allowed := known[path]
		for _, k := range slices.Sorted(maps.Keys(m)) {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if !contains(allowed, k) {
				return &FieldError{p, "unknown field"}
			}
			if _, nested := known[p]; nested && m[k] != nil {
				sub, ok := m[k].(map[string]any)
				if !ok {
					return &FieldError{p, fmt.Sprintf("must be a mapping, not %s", kindOf(m[k]))}
				}
				if err := walk(p, sub); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk("", top)
}

// jsonFieldError names the field of a decoding error of the spec raw.
func jsonFieldError(err error, raw any) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "spec"
		}
		return &FieldError{field, fmt.Sprintf("must be %s, not %s", goTypeWord(te.Type.Kind().String()), te.Value)}
	}
	msg := err.Error()
	// Errors from a field's own UnmarshalJSON (e.g. Duration) carry no path.
	if strings.Contains(msg, "duration") {
		return &FieldError{badDurationOption(raw), msg}
	}
	return &FieldError{"", "invalid job spec: " + msg}
}

// badDurationOption names the first duration option of raw that does not
// decode ("options" if none is found): every Duration field of Options
// is tried, so one added later is named too.
func badDurationOption(raw any) string {
	top, _ := raw.(map[string]any)
	opts, _ := top["options"].(map[string]any)
	t := reflect.TypeFor[Options]()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		v, ok := opts[name]
		if f.Type != reflect.TypeFor[Duration]() || !ok {
			continue
		}
		b, _ := json.Marshal(v)
		var d Duration
		if d.UnmarshalJSON(b) != nil {
			return "options." + name
		}
	}
	return "options"
}

func goTypeWord(kind string) string {
	switch kind {
	case "int", "int64":
		return "an integer"
	case "float64":
		return "a number"
	case "bool":
		return "true or false"
	case "string":
		return "a string"
	case "map":
		return "a mapping"
	case "slice":
		return "a list"
	case "struct":
		return "a mapping"
	}
	return kind
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case float64, int, int64, uint64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("%T", v)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
