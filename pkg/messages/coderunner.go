package messages

import "fmt"

// Validation says how a job checks its script (options.validate).
type Validation string

const (
	// ValidateTests generates tests and runs them, then runs the script on
	// the samples (the default; "" means the same).
	ValidateTests Validation = "tests"
	// ValidateRun generates no tests: the script is run in the sandbox on
	// the samples, and a non-zero exit, a timeout or a missing declared
	// output goes back to the model (the code runner).
	ValidateRun Validation = "run"
)

// ValidatesByRun reports whether the job is checked by running its script
// (options.validate: run).
func (o *Options) ValidatesByRun() bool { return o.Validate == ValidateRun }

// Bounds on a job's context (JobSpec.Context), checked by the submitter
// when it reads the files and again by the llm-worker that reads the bundle.
const (
	MaxContextEntries = 64      // paths in context:
	MaxContextFiles   = 512     // documentation files after folders are walked
	MaxContextBytes   = 8 << 20 // text of all files, after HTML tags are stripped
	MaxContextFile    = 2 << 20 // one file as read from disk
)

// ContextBundle is the object a submitter uploads for a job's context: the
// documentation files as plain text (HTML already stripped), each under
// the path it was given as, relative where it could be. On the wire,
// JobSpec.Context holds the bundle's object reference.
type ContextBundle struct {
	Files []ContextFile `json:"files"`
}

// ContextFile is one documentation file of a ContextBundle.
type ContextFile struct {
	Path string `json:"path"`
	Text string `json:"text"`
}

// ContextChunk names one chunk of the context that went into a prompt.
type ContextChunk struct {
	File    string  `json:"file"`
	Index   int     `json:"index"`             // the chunk's position in its file, from 0
	Heading string  `json:"heading,omitempty"` // the nearest Markdown or HTML heading above it
	Score   float64 `json:"score"`             // BM25 score against the stage's query; 0 when the whole context fitted
}

// StageContext is what one model stage was given of the job's context.
type StageContext struct {
	Stage     Stage          `json:"stage"`
	Seq       int            `json:"seq"`
	Iteration int            `json:"iteration"`
	Retrieved bool           `json:"retrieved"` // false: the whole context fitted the budget
	Chunks    []ContextChunk `json:"chunks"`    // on the result, at most the first 20
}

// ContextUse is the part of a model stage's output that says which chunks
// of the context its prompt held; it sits beside the stage's own fields.
type ContextUse struct {
	Context *StageContext `json:"context_used,omitempty"`
}

// validateCodeRunner checks options.validate and context.
func (s *JobSpec) validateCodeRunner() error {
	o := &s.Options
	switch o.Validate {
	case "", ValidateTests:
	case ValidateRun:
		if o.SkipTests {
			// skip_tests skips every check; validate: run is a check. The
			// pair is refused rather than one silently winning.
			return &FieldError{"options.skip_tests", "cannot be combined with options.validate: run (running the script is the check; skip_tests skips every check)"}
		}
		if o.Candidates > 1 {
			// Candidates race on their test results; a run has none to compare.
			return &FieldError{"options.candidates", "must be 1 with options.validate: run (candidates are chosen by their tests)"}
		}
	default:
		return &FieldError{"options.validate", fmt.Sprintf("unsupported value %q (want tests or run)", o.Validate)}
	}
	if len(s.Context) > MaxContextEntries {
		return &FieldError{"context", fmt.Sprintf("has %d entries, at most %d", len(s.Context), MaxContextEntries)}
	}
	for i, c := range s.Context {
		if c == "" {
			return &FieldError{fmt.Sprintf("context[%d]", i), "path is empty"}
		}
	}
	return nil
}
