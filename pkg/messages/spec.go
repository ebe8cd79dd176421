package messages

import (
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// WireVersion is the version of every message in this package, its "v":
// the version of the wire format. A consumer rejects a message whose "v"
// is newer than the one it was built with.
const WireVersion = 1

// SchemaVersion is WireVersion's former name.
//
// Deprecated: use WireVersion. It stays while branches written against
// the old name are merged, and then goes.
const SchemaVersion = WireVersion

// Type is a declared input or output type (Contract 1 (docs/contracts.md)).
type Type string

// The types a JobSpec may declare.
const (
	TypeStr       Type = "str"
	TypeInt       Type = "int"
	TypeFloat     Type = "float"
	TypeBool      Type = "bool"
	TypeDatetime  Type = "datetime"
	TypeTimedelta Type = "timedelta"
	TypeFile      Type = "File"
	TypeDir       Type = "Dir"
)

// InputTypes are the types allowed for inputs; OutputTypes for outputs.
var (
	InputTypes  = []Type{TypeStr, TypeInt, TypeFloat, TypeBool, TypeFile, TypeDir}
	OutputTypes = []Type{TypeStr, TypeInt, TypeFloat, TypeBool, TypeDatetime, TypeTimedelta, TypeFile, TypeDir}
)

// CacheMode says how a job uses the content-addressed cache.
type CacheMode string

const (
	CacheAuto     CacheMode = "auto"     // read and write (default)
	CacheOverride CacheMode = "override" // recompute, then write
	CacheDisable  CacheMode = "disable"  // neither read nor write
)

// Backend selects how a job is driven: the staged pipeline or the tool-using agent.
type Backend string

const (
	BackendPipeline Backend = "pipeline"
	BackendAgent    Backend = "agent"
)

// Defaults applied by (*JobSpec).Normalize.
const (
	DefaultModel         = "gpt-4.1"
	DefaultMaxIterations = 10
	DefaultMaxSampleRows = 100
	// MaxSampleRowsLimit bounds options.max_sample_rows: the rows go into
	// every prompt's data context, whose budget would cut them anyway.
	MaxSampleRowsLimit = 1000
	DefaultTimeout     = 60 * time.Second
	// MaxTimeout is the longest options.timeout a job may ask for.
	MaxTimeout = time.Hour
)

// JobSpec is what a user asks for (Contract 1 (docs/contracts.md)). On the CLI, Samples are file
// paths; on the wire they are object references (see ParseObjectRef).
type JobSpec struct {
	Name        string            `json:"name,omitempty"`
	Prompt      string            `json:"prompt"`
	Schema      string            `json:"schema,omitempty"`
	Constraints []string          `json:"constraints,omitempty"`
	Samples     map[string]string `json:"samples,omitempty"`
	Inputs      map[string]Type   `json:"inputs,omitempty"`
	Outputs     map[string]Type   `json:"outputs,omitempty"`
	Options     Options           `json:"options,omitempty"`

	// Context is documentation for the model (coderunner.go): on the CLI,
	// Markdown, text or HTML files or folders; on the wire, object
	// references of ContextBundles.
	Context []string `json:"context,omitempty"`

	// Mode codemode makes the job a code-mode job (codemode.go), whose
	// fields are the CodeModeSpec's, flat in the spec.
	Mode Mode `json:"mode,omitempty"`
	CodeModeSpec
}

// Options tune a job. The zero value of every field means its default.
type Options struct {
	Model         string    `json:"model,omitempty"`           // default AUTOCODER_MODEL or gpt-4.1
	MaxIterations int       `json:"max_iterations,omitempty"`  // test runs before giving up; default 10
	SkipTests     bool      `json:"skip_tests,omitempty"`      // code, packages and image only
	MaxSampleRows int       `json:"max_sample_rows,omitempty"` // rows shown to the model; default 100
	BasePackages  []string  `json:"base_packages,omitempty"`   // always installed
	Cache         CacheMode `json:"cache,omitempty"`           // default auto
	Timeout       Duration  `json:"timeout,omitempty"`         // per sandbox run; default 60s
	Resources     Resources `json:"resources,omitempty"`
	Backend       Backend   `json:"backend,omitempty"`    // default pipeline
	Candidates    int       `json:"candidates,omitempty"` // parallel solutions; default 1
	// FirstPass is one_round (default) or plan_first (firstpass.go).
	FirstPass   FirstPass `json:"first_pass,omitempty"`
	TokenBudget int       `json:"token_budget,omitempty"`

	// Validate is tests (default) or run, the code runner (coderunner.go).
	Validate      Validation `json:"validate,omitempty"`
	AgentMaxTurns int        `json:"agent_max_turns,omitempty"` // backend agent: model turns; default 50

	// The model's settings (settings.go): every model call of the job
	// carries them, and they are part of each model stage's cache key.
	// Nil or zero: the model's (the server's) default.
	Temperature *float64 `json:"temperature,omitempty"` // 0 to 2
	MaxTokens   int      `json:"max_tokens,omitempty"`  // bound of one reply's tokens
	TopP        *float64 `json:"top_p,omitempty"`       // above 0, at most 1
	Seed        *int64   `json:"seed,omitempty"`
	// SystemPrompt replaces the project's system prompt of every call;
	// SystemPromptPrefix goes before it (or before SystemPrompt).
	SystemPrompt       string `json:"system_prompt,omitempty"`
	SystemPromptPrefix string `json:"system_prompt_prefix,omitempty"`

	// The sandbox's settings (settings.go). EnvVars are plain values set in
	// every sandbox run of the job (part of the cache key); Secrets are
	// names only, whose values the sandbox worker reads from its own
	// secret source. Python is the interpreter's version ("3.12"), from
	// those the fleet offers; SandboxRetries are retries of a sandbox stage
	// after an infrastructure failure (never after failing tests).
	EnvVars        map[string]string `json:"env_vars,omitempty"`
	Secrets        []string          `json:"secrets,omitempty"`
	Python         string            `json:"python,omitempty"`
	SandboxRetries int               `json:"sandbox_retries,omitempty"`

	// Test strength by mutation (strength.go): mutation on (default),
	// measure or off; the score below which the tests are strengthened;
	// strengthening rounds; mutants per measurement; time per measurement.
	Mutation         Mutation `json:"mutation,omitempty"`
	MinTestStrength  float64  `json:"min_test_strength,omitempty"`
	StrengthenRounds int      `json:"strengthen_rounds,omitempty"`
	MaxMutants       int      `json:"max_mutants,omitempty"`
	MutationBudget   Duration `json:"mutation_budget,omitempty"`
}

// Resources limit one sandbox run.
type Resources struct {
	CPU    float64 `json:"cpu,omitempty"`    // cores; default 1
	Memory string  `json:"memory,omitempty"` // Kubernetes-style quantity, e.g. 512Mi; default 1Gi (DefaultMemory)
}

// Duration is a time.Duration that reads and writes as "60s" (or a number of seconds).
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(strconv.Quote(time.Duration(d).String())), nil
}

func (d *Duration) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return nil
	}
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		*d = Duration(time.Duration(n * float64(time.Second)))
		return nil
	}
	uq, err := strconv.Unquote(s)
	if err != nil {
		return fmt.Errorf("duration must be a string like \"60s\"")
	}
	v, err := time.ParseDuration(uq)
	if err != nil {
		return fmt.Errorf("invalid duration %q", uq)
	}
	*d = Duration(v)
	return nil
}

// Std returns the standard library duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// FieldError is a validation error that names the offending field.
type FieldError struct {
	Field string // dotted path, e.g. "options.max_iterations"
	Msg   string
}

// Error names the field and says what is wrong, safe to print: a field
// whose name holds characters that do not print is quoted, and control
// characters in the message are escaped (see Printable), since both may
// come from a job file.
func (e *FieldError) Error() string {
	if e.Field == "" {
		return Printable(e.Msg)
	}
	return QuoteName(e.Field) + ": " + Printable(e.Msg)
}

var identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ValidName reports whether name is the kind of name Validate accepts for
// samples, inputs and outputs: a Python identifier. Whoever reads names
// back from a result (and makes files of them) checks them with it.
func ValidName(name string) bool { return identRe.MatchString(name) }

// pythonReserved are names that cannot be argparse destinations or function parameters.
var pythonReserved = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true, "async": true,
	"await": true, "break": true, "class": true, "continue": true, "def": true, "del": true, "elif": true,
	"else": true, "except": true, "finally": true, "for": true, "from": true, "global": true, "if": true,
	"import": true, "in": true, "is": true, "lambda": true, "nonlocal": true, "not": true, "or": true,
	"pass": true, "raise": true, "return": true, "try": true, "while": true, "with": true, "yield": true,
}

var quantityRe = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|K|M|G|T|k)?$`)

// FormatBytes writes n in MiB or KiB when it is a whole number of them,
// else in bytes: how a bound is named in an error ("larger than 4 MiB").
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ParseQuantity parses a Kubernetes-style memory quantity ("512Mi", "1G", "1048576") into bytes.
func ParseQuantity(s string) (int64, error) {
	m := quantityRe.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("invalid quantity %q (want e.g. 512Mi)", s)
	}
	f, _ := strconv.ParseFloat(m[1], 64)
	mult := map[string]float64{"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
		"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40}[m[2]]
	return int64(f * mult), nil
}

// Validate checks the spec and returns the first problem as a *FieldError.
// It does not touch the filesystem: the CLI checks that sample paths exist.
// The checks run in the order of the spec's fields.
func (s *JobSpec) Validate() error {
	if done, err := s.validateMode(); done {
		return err
	}
	o := &s.Options
	checks := []func() error{
		s.validateTask,
		s.validateParameters,
		s.validateOutputs,
		o.validateLimits,
		o.validateChoices,
		o.validateRun,
		o.validateBasePackages,
		o.validateModel,
		o.validateSandbox,
		s.validateCodeRunner,
		s.validateAgent,
		o.validateMutation, // strength.go
		s.validateMutationApplies,
		s.validateFirstPass,
	}
	for _, check := range checks {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateTask checks the prompt, the name and the constraints.
func (s *JobSpec) validateTask() error {
	if strings.TrimSpace(s.Prompt) == "" {
		return &FieldError{"prompt", "is required"}
	}
	if s.Name != "" && !regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`).MatchString(s.Name) {
		return &FieldError{"name", "must be letters, digits, '.', '_' or '-' (at most 63)"}
	}
	for i, c := range s.Constraints {
		if strings.TrimSpace(c) == "" {
			return &FieldError{fmt.Sprintf("constraints[%d]", i), "is empty"}
		}
	}
	return nil
}

// validateParameters checks samples and inputs, which become the script's
// parameters: each a Python identifier, no name used twice.
func (s *JobSpec) validateParameters() error {
	seen := map[string]string{}
	check := func(kind, name string) error {
		field := kind + "." + name
		if !identRe.MatchString(name) || pythonReserved[name] {
			return &FieldError{field, "must be a Python identifier"}
		}
		if prev, ok := seen[name]; ok {
			return &FieldError{field, "name is already used in " + prev}
		}
		seen[name] = kind
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(s.Samples)) {
		if err := check("samples", name); err != nil {
			return err
		}
		if strings.TrimSpace(s.Samples[name]) == "" {
			return &FieldError{"samples." + name, "path is empty"}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Inputs)) {
		if err := check("inputs", name); err != nil {
			return err
		}
		if !typeIn(s.Inputs[name], InputTypes) {
			return &FieldError{"inputs." + name, fmt.Sprintf("unsupported type %q (want one of %s)", s.Inputs[name], typeList(InputTypes))}
		}
	}
	return nil
}

// validateOutputs checks the outputs' names and types.
func (s *JobSpec) validateOutputs() error {
	for _, name := range slices.Sorted(maps.Keys(s.Outputs)) {
		if !identRe.MatchString(name) {
			return &FieldError{"outputs." + name, "must be a Python identifier"}
		}
		if !typeIn(s.Outputs[name], OutputTypes) {
			return &FieldError{"outputs." + name, fmt.Sprintf("unsupported type %q (want one of %s)", s.Outputs[name], typeList(OutputTypes))}
		}
	}
	return nil
}

// validateLimits checks the numeric limits on the job's work.
func (o *Options) validateLimits() error {
	if o.MaxIterations < 0 {
		return &FieldError{"options.max_iterations", "must not be negative"}
	}
	if o.MaxIterations > 100 {
		return &FieldError{"options.max_iterations", "must be at most 100"}
	}
	if o.MaxSampleRows < 0 || o.MaxSampleRows > MaxSampleRowsLimit {
		return &FieldError{"options.max_sample_rows", fmt.Sprintf("must be between 0 and %d: the rows are shown in every prompt", MaxSampleRowsLimit)}
	}
	if o.Candidates < 0 || o.Candidates > 16 {
		return &FieldError{"options.candidates", "must be between 1 and 16"}
	}
	if o.Candidates > 1 && o.SkipTests {
		// Candidates are chosen by their tests; without tests one solution
		// would be written.
		return &FieldError{"options.candidates", "must be 1 with options.skip_tests (candidates are chosen by their tests)"}
	}
	if o.TokenBudget < 0 {
		return &FieldError{"options.token_budget", "must not be negative"}
	}
	if o.AgentMaxTurns < 0 || o.AgentMaxTurns > MaxAgentMaxTurns {
		return &FieldError{"options.agent_max_turns", fmt.Sprintf("must be between 1 and %d", MaxAgentMaxTurns)}
	}
	return nil
}

// validateChoices checks the options that take one of a few values.
func (o *Options) validateChoices() error {
	switch o.Cache {
	case "", CacheAuto, CacheOverride, CacheDisable:
	default:
		return &FieldError{"options.cache", fmt.Sprintf("unsupported value %q (want auto, override or disable)", o.Cache)}
	}
	switch o.Backend {
	case "", BackendPipeline:
	case BackendAgent:
	default:
		return &FieldError{"options.backend", fmt.Sprintf("unsupported value %q (want pipeline or agent)", o.Backend)}
	}
	return nil
}

// validateRun checks the timeout and resources of a test run.
func (o *Options) validateRun() error {
	if o.Timeout < 0 {
		return &FieldError{"options.timeout", "must not be negative"}
	}
	if o.Timeout.Std() > MaxTimeout {
		return &FieldError{"options.timeout", "must be at most 1h"}
	}
	if o.Resources.CPU < 0 || o.Resources.CPU > 64 {
		return &FieldError{"options.resources.cpu", "must be between 0 and 64"}
	}
	if o.Resources.Memory != "" {
		n, err := ParseQuantity(o.Resources.Memory)
		if err != nil {
			return &FieldError{"options.resources.memory", err.Error()}
		}
		if n < 16<<20 {
			return &FieldError{"options.resources.memory", "must be at least 16Mi"}
		}
	}
	return nil
}

// validateBasePackages checks that every base package is a package name.
func (o *Options) validateBasePackages() error {
	for i, p := range o.BasePackages {
		if !PackageNameRe.MatchString(p) {
			return &FieldError{fmt.Sprintf("options.base_packages[%d]", i), fmt.Sprintf("%q is not a package name", p)}
		}
	}
	return nil
}

// PackageNameRe matches a PEP 508 distribution name with an optional simple
// version specifier ("pandas", "numpy>=1.24", "scikit-learn==1.3.0"). URLs,
// paths and shell syntax never match.
var PackageNameRe = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?(\[[A-Za-z0-9._,-]+\])?((==|>=|<=|~=|!=|<|>)[A-Za-z0-9.*+!-]+(,(==|>=|<=|~=|!=|<|>)[A-Za-z0-9.*+!-]+)*)?$`)

// Normalize fills in defaults. defaultModel is used when Options.Model is empty
// (pass "" for DefaultModel). It fills only options that apply to the job,
// so a normalised spec (a result's, which Rerun submits again) validates.
func (s *JobSpec) Normalize(defaultModel string) {
	o := &s.Options
	if o.Model == "" {
		o.Model = defaultModel
		if o.Model == "" {
			o.Model = DefaultModel
		}
	}
	if o.Cache == "" {
		o.Cache = CacheAuto
	}
	if s.Mode == ModeCodeMode {
		return // of the defaults, only model and cache apply (validateCodeModeOptions)
	}
	if o.MaxIterations == 0 && o.Backend != BackendAgent {
		o.MaxIterations = DefaultMaxIterations
	}
	if o.MaxSampleRows == 0 {
		o.MaxSampleRows = DefaultMaxSampleRows
	}
	if o.Timeout == 0 {
		o.Timeout = Duration(DefaultTimeout)
	}
	if o.Backend == "" {
		o.Backend = BackendPipeline
	}
	if o.Candidates == 0 {
		o.Candidates = 1
	}
	if o.AgentMaxTurns == 0 && o.Backend == BackendAgent {
		o.AgentMaxTurns = DefaultAgentMaxTurns
	}
	if o.Resources.CPU == 0 {
		o.Resources.CPU = 1
	}
	if o.Resources.Memory == "" {
		o.Resources.Memory = DefaultMemory
	}
	s.normalizeMutation() // strength.go
	s.normalizeFirstPass()
}

// dropUnapplied clears the defaults an older Normalize wrote where they do
// not apply (max_iterations on the agent backend, the mutation settings of
// a job without generated tests, the pipeline's defaults in code mode), and
// candidates above 1 with skip_tests, which ran with one: a result stored
// before Validate refused them still runs again (submit run, a task, the
// web UI's Rerun). None of them changed what the job did.
func (s *JobSpec) dropUnapplied() {
	o := &s.Options
	if s.Mode == ModeCodeMode {
		o.MaxIterations, o.MaxSampleRows, o.Timeout, o.Resources, o.Backend, o.Candidates = 0, 0, 0, Resources{}, "", 0
		o.Mutation = ""
	}
	if o.Backend == BackendAgent {
		o.MaxIterations = 0
	}
	if s.Mode == ModeCodeMode || o.noTestsToMutate() != "" {
		o.MinTestStrength, o.StrengthenRounds, o.MaxMutants, o.MutationBudget = 0, 0, 0, 0
	}
	// An older Normalize filled the tuning in for mutation: off and
	// measure too, where Validate now refuses what they ignore.
	switch o.Mutation {
	case MutationOff:
		o.MinTestStrength, o.StrengthenRounds, o.MaxMutants, o.MutationBudget = 0, 0, 0, 0
	case MutationMeasure:
		o.MinTestStrength, o.StrengthenRounds = 0, 0
	}
	if o.SkipTests && o.Candidates > 1 {
		o.Candidates = 1
	}
}

// ObjectRef is a sample's place in the object store: its content hash and the
// extension of the file it came from (so "sales" from "orders.csv" becomes
// /var/inputs/sales.csv). Its string form is "sha256:<64 hex>[.ext]".
type ObjectRef struct {
	SHA256 string // lower-case hex
	Ext    string // with the dot, e.g. ".csv"; may be empty
}

var objectRefRe = regexp.MustCompile(`^sha256:([0-9a-f]{64})(\.[A-Za-z0-9]{1,16})?$`)

// String returns the wire form.
func (r ObjectRef) String() string { return "sha256:" + r.SHA256 + r.Ext }

// ObjectName is the name of the object in the NATS Object Store.
func (r ObjectRef) ObjectName() string { return "sha256-" + r.SHA256 }

// ParseObjectRef parses "sha256:<hex>[.ext]". ok is false for anything else
// (such as a file path).
func ParseObjectRef(s string) (ObjectRef, bool) {
	m := objectRefRe.FindStringSubmatch(s)
	if m == nil {
		return ObjectRef{}, false
	}
	return ObjectRef{SHA256: m[1], Ext: m[2]}, true
}

// RefExt is the extension an object reference keeps of a file's path:
// its extension when that is a dot and 1 to 16 letters or digits (as
// ParseObjectRef takes it), else "".
func RefExt(path string) string {
	ext := filepath.Ext(path)
	if len(ext) < 2 || len(ext) > 17 {
		return ""
	}
	for _, c := range ext[1:] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return ""
		}
	}
	return ext
}

// SampleFileName is the file name of a sample under /var/inputs: the sample's
// name plus the extension of its file.
func SampleFileName(name, pathOrRef string) string {
	if r, ok := ParseObjectRef(pathOrRef); ok {
		return name + r.Ext
	}
	return name + filepath.Ext(pathOrRef)
}

func typeIn(t Type, set []Type) bool {
	for _, x := range set {
		if x == t {
			return true
		}
	}
	return false
}

func typeList(set []Type) string {
	s := make([]string, len(set))
	for i, t := range set {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}
