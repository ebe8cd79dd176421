package messages

import (
	"encoding/json"
	"time"
)

// Stage names one step of the loop. The coordinator sends a StageCommand for
// it; a worker answers with a StageResult.
type Stage string

// LLM stages, handled by llm-workers.
const (
	StagePlan       Stage = "plan"
	StageCode       Stage = "code"
	StageTests      Stage = "tests"
	StagePackages   Stage = "packages" // model fallback for imports the static scan cannot map
	StageDiagnose   Stage = "diagnose"
	StageFix        Stage = "fix"
	StagePatchTests Stage = "patch_tests"
	StageVerify     Stage = "verify"
	// StageConstraint reads the constraints the deterministic parser could
	// not into checks (the `constraint` call, one per constraint).
	StageConstraint Stage = "constraint"
	// StagePackageReplacement asks for a package that exists in place of
	// one the index or apt does not have (the `package_replacement` call).
	StagePackageReplacement Stage = "package_replacement"
)

// Sandbox stages, handled by sandbox-workers.
const (
	StageProfile    Stage = "profile"
	StageBuild      Stage = "build"
	StageRunTests   Stage = "run_tests"
	StageAcceptance Stage = "acceptance"
	StageRun        Stage = "run" // a generated script run on new data (submit run)
)

// StageCommand asks a worker to do one stage of one job. Input holds the
// stage's input struct (PlanInput, CodeInput, ...) as JSON.
type StageCommand struct {
	V         int             `json:"v"`
	JobID     string          `json:"job_id"`
	Seq       int             `json:"seq"` // unique within the job; results are matched by it
	Stage     Stage           `json:"stage"`
	Iteration int             `json:"iteration"`
	Model     string          `json:"model,omitempty"`
	Cache     CacheMode       `json:"cache,omitempty"`
	Input     json.RawMessage `json:"input"`
	// Settings are the job's per-job settings the worker applies (the
	// model's to a model call, the sandbox's to a sandbox run); nil: none.
	// They are part of the stage's cache key.
	Settings *StageSettings `json:"settings,omitempty"`
}

// ErrorKind classifies a failed stage.
type ErrorKind string

const (
	// ErrorPermanent: retrying the same command cannot help (bad input, the
	// model refused, an invalid package name).
	ErrorPermanent ErrorKind = "permanent"
	// ErrorInfra: the stage could not be done after the worker's retries
	// (model endpoint down, sandbox backend broken).
	ErrorInfra ErrorKind = "infra"
)

// StageResult is a worker's answer to a StageCommand. Exactly one of Output
// and Error is set.
type StageResult struct {
	V          int             `json:"v"`
	JobID      string          `json:"job_id"`
	Seq        int             `json:"seq"`
	Stage      Stage           `json:"stage"`
	Output     json.RawMessage `json:"output,omitempty"`
	Error      string          `json:"error,omitempty"`
	ErrorKind  ErrorKind       `json:"error_kind,omitempty"`
	Cached     bool            `json:"cached,omitempty"`
	Usage      Usage           `json:"usage"`
	StartedAt  time.Time       `json:"started_at"`
	DurationMS int64           `json:"duration_ms"`
	Worker     string          `json:"worker,omitempty"`
	// Messages is the model conversation of an LLM stage, for conversation_history.
	Messages []ChatMessage `json:"messages,omitempty"`
}

// Usage counts model tokens and calls, and what they cost (the model
// table's prices; 0 for a model without).
type Usage struct {
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	Calls        int     `json:"calls"`
	Cost         float64 `json:"cost,omitempty"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{u.InputTokens + o.InputTokens, u.OutputTokens + o.OutputTokens, u.Calls + o.Calls, u.Cost + o.Cost}
}

// ChatMessage is one message of a model conversation.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	Stage   Stage  `json:"stage,omitempty"`
}

// TaskSpec is the part of a JobSpec that prompts need: what to build, with
// samples given by their file names under /var/inputs.
type TaskSpec struct {
	Prompt      string            `json:"prompt"`
	Schema      string            `json:"schema,omitempty"`
	Constraints []string          `json:"constraints,omitempty"`
	Samples     map[string]string `json:"samples,omitempty"` // name -> file name under /var/inputs
	Inputs      map[string]Type   `json:"inputs,omitempty"`
	Outputs     map[string]Type   `json:"outputs,omitempty"`
	Context     []string          `json:"context,omitempty"` // object references of ContextBundles (coderunner.go)
}

// ---- LLM stage inputs and outputs (Contract 3 (docs/contracts.md) shapes) ----

// PlanInput is the input of StagePlan.
type PlanInput struct {
	Task        TaskSpec `json:"task"`
	DataContext string   `json:"data_context,omitempty"`
}

// Plan is the `plan` structured reply.
type Plan struct {
	Description string `json:"description"`
	Approach    string `json:"approach"`
}

// CodeInput is the input of StageCode.
type CodeInput struct {
	Task         TaskSpec `json:"task"`
	DataContext  string   `json:"data_context,omitempty"`
	Plan         Plan     `json:"plan"`
	BasePackages []string `json:"base_packages,omitempty"`
	// Candidate (1-based) of Candidates is set when options.candidates asks
	// for several independent solutions; each has its own cache key.
	Candidate  int `json:"candidate,omitempty"`
	Candidates int `json:"candidates,omitempty"`
	// Attempt counts regenerations: the loop was stuck, so the code is
	// written again from the plan, with Hints (the failure history) to avoid.
	Attempt int      `json:"attempt,omitempty"`
	Hints   []string `json:"hints,omitempty"`
	// PlanInline asks for the plan as a field of the reply (CodeOutput.Plan)
	// instead of giving one: the one-round first pass (FirstPassOneRound).
	PlanInline bool `json:"plan_inline,omitempty"`
}

// CodeOutput is the output of StageCode: the solution and, when the
// command asked for it (CodeInput.PlanInline) and the model wrote one, the
// plan. A model may leave the plan out; the solution stands without it.
type CodeOutput struct {
	Solution
	Plan *Plan `json:"plan,omitempty"`
}

// Solution is the `solution` structured reply.
type Solution struct {
	Language       string   `json:"language"`
	Code           string   `json:"code"`
	Packages       []string `json:"packages"`
	SystemPackages []string `json:"system_packages"`
}

// TestsInput is the input of StageTests. Tests depend on the task and plan,
// not on the code, so they are generated concurrently with it.
type TestsInput struct {
	Task        TaskSpec `json:"task"`
	DataContext string   `json:"data_context,omitempty"`
	Plan        Plan     `json:"plan"`
	// Attempt counts regenerations of the tests: the loop was stuck on
	// failures that were the tests' own, so they are written again, with
	// Hints (the failure history) to avoid.
	Attempt int      `json:"attempt,omitempty"`
	Hints   []string `json:"hints,omitempty"`
}

// Tests is the `tests` structured reply.
type Tests struct {
	Code string `json:"code"`
}

// PackagesInput is the input of StagePackages: imports the static scan could not map.
type PackagesInput struct {
	Imports []string `json:"imports"`
	// Stdlib is the sandbox interpreter's standard library when the
	// coordinator knows it (BuildOutput.Stdlib); empty: the worker's own list.
	Stdlib []string `json:"stdlib,omitempty"`
}

// Packages is the `packages` structured reply.
type Packages struct {
	Packages []string `json:"packages"`
}

// DiagnoseInput is the input of StageDiagnose.
type DiagnoseInput struct {
	Task     TaskSpec   `json:"task"`
	Plan     Plan       `json:"plan"`
	Code     string     `json:"code"`
	Tests    string     `json:"tests"`
	Report   TestReport `json:"report"`
	Packages []string   `json:"packages,omitempty"`
	// Hints carries notes from earlier iterations (e.g. "test_x failed again after a test patch").
	Hints []string `json:"hints,omitempty"`
	// Stdlib is the sandbox interpreter's standard library when the
	// coordinator knows it (BuildOutput.Stdlib): a missing module named in
	// the report is a package to add only if it is not in it. Empty: the
	// worker's own list.
	Stdlib []string `json:"stdlib,omitempty"`
}

// ErrorType is the diagnosis of one failing test.
type ErrorType string

const (
	ErrorLogic       ErrorType = "logic"       // the solution is wrong: fix the code
	ErrorEnvironment ErrorType = "environment" // a package is missing: rebuild the image
	ErrorTestError   ErrorType = "test_error"  // the test is wrong: patch the test
)

// Failure is one diagnosed failing test.
type Failure struct {
	TestName         string    `json:"test_name"`
	ErrorMessage     string    `json:"error_message"`
	ExpectedBehavior string    `json:"expected_behavior"`
	ActualBehavior   string    `json:"actual_behavior"`
	RootCause        string    `json:"root_cause"`
	SuggestedFix     string    `json:"suggested_fix"`
	ErrorType        ErrorType `json:"error_type"`
}

// Diagnosis is the `diagnosis` structured reply.
type Diagnosis struct {
	Failures            []Failure `json:"failures"`
	NeedsPackages       []string  `json:"needs_packages"`
	NeedsSystemPackages []string  `json:"needs_system_packages"`
}

// FixInput is the input of StageFix: the code and the logic failures to fix.
type FixInput struct {
	Task     TaskSpec  `json:"task"`
	Plan     Plan      `json:"plan"`
	Code     string    `json:"code"`
	Tests    string    `json:"tests"`
	Failures []Failure `json:"failures"`
	Packages []string  `json:"packages,omitempty"`
	// Escalation is 0 on a first attempt; higher when earlier fixes were not applied.
	Escalation int      `json:"escalation,omitempty"`
	Missing    []string `json:"missing,omitempty"` // fixes a verification found missing
	// Reflect marks the code runner's reflection turn (options.validate:
	// run): there are no tests, and the failure is a run of the script.
	Reflect bool `json:"reflect,omitempty"`
}

// PatchTestsInput is the input of StagePatchTests.
type PatchTestsInput struct {
	Task     TaskSpec  `json:"task"`
	Code     string    `json:"code"`
	Tests    string    `json:"tests"`
	Failures []Failure `json:"failures"`
	// Escalation is 0 on a first attempt; higher when an earlier patch left
	// failing test functions unchanged. Missing names them.
	Escalation int      `json:"escalation,omitempty"`
	Missing    []string `json:"missing,omitempty"`
}

// TestPatch replaces one test function.
type TestPatch struct {
	TestName  string `json:"test_name"`
	FixedCode string `json:"fixed_code"`
}

// TestPatches is the `test_patches` structured reply.
type TestPatches struct {
	Patches []TestPatch `json:"patches"`
}

// PatchTestsOutput is the result of StagePatchTests: the model's patches and
// the test file with them spliced in.
type PatchTestsOutput struct {
	Patches []TestPatch `json:"patches"`
	Tests   string      `json:"tests"`
	// Unapplied names the patches that were not spliced in: their test is
	// not a failing one, or the patch does not define it. Reasons says why,
	// as "test_name: reason", one per entry of Unapplied.
	Unapplied []string `json:"unapplied,omitempty"`
	Reasons   []string `json:"reasons,omitempty"`
}

// VerifyInput is the input of StageVerify.
type VerifyInput struct {
	OldCode  string    `json:"old_code"`
	NewCode  string    `json:"new_code"`
	Failures []Failure `json:"failures"`
}

// FixVerification is the `fix_verification` structured reply.
type FixVerification struct {
	AllFixesApplied bool     `json:"all_fixes_applied"`
	MissingFixes    []string `json:"missing_fixes"`
	Explanation     string   `json:"explanation"`
}

// ---- Sandbox stage inputs and outputs ----

// SampleRef is a sample as a sandbox-worker sees it.
type SampleRef struct {
	Name     string `json:"name"`
	Object   string `json:"object"`    // ObjectRef wire form: sha256:<hex>[.ext]
	FileName string `json:"file_name"` // under /var/inputs, e.g. sales.csv
	Size     int64  `json:"size,omitempty"`
	// Dir: the object is a tar archive of a directory (a Dir input), unpacked
	// at /var/inputs/<file_name>.
	Dir bool `json:"dir,omitempty"`
}

// ProfileInput is the input of StageProfile.
type ProfileInput struct {
	Samples       []SampleRef `json:"samples"`
	MaxSampleRows int         `json:"max_sample_rows"`
	Constraints   []string    `json:"constraints,omitempty"`
}

// ProfileOutput is the output of StageProfile.
type ProfileOutput struct {
	DataContext      string            `json:"data_context"`
	GeneratedSchemas map[string]string `json:"generated_schemas,omitempty"`
	// Unparsed are the constraints the deterministic parser could not read;
	// they go to StageConstraint. Columns and Render are what that stage
	// needs: the samples' columns, and what the data context and schemas
	// are rendered from (internal/profile.Rendition), to render them again
	// with the checks it reads.
	Unparsed []string        `json:"unparsed,omitempty"`
	Columns  []DataColumn    `json:"columns,omitempty"`
	Render   json.RawMessage `json:"render,omitempty"`
}

// DataColumn is a column of a tabular sample, as profiled.
type DataColumn struct {
	Sample string `json:"sample"`
	Name   string `json:"name"`
	Type   string `json:"type"` // int, float, bool, datetime, string or null (no values)
}

// ConstraintInput is the input of StageConstraint.
type ConstraintInput struct {
	Constraints []string        `json:"constraints"`
	Columns     []DataColumn    `json:"columns,omitempty"`
	Render      json.RawMessage `json:"render,omitempty"` // ProfileOutput.Render
}

// Constraint is the `constraint` structured reply: one constraint as a check.
type Constraint struct {
	ColumnName  *string              `json:"column_name"`
	CheckType   string               `json:"check_type"` // greater_than, less_than, between, regex, isin, not_null or none
	Parameters  ConstraintParameters `json:"parameters"`
	Explanation string               `json:"explanation"`
}

// ConstraintParameters are the parameters of a Constraint; each check type
// uses some of them.
type ConstraintParameters struct {
	Value   *float64 `json:"value"`   // greater_than, less_than
	Min     *float64 `json:"min"`     // between
	Max     *float64 `json:"max"`     // between
	Pattern *string  `json:"pattern"` // regex
	Values  []any    `json:"values"`  // isin: strings or numbers
}

// ConstraintCheck is a constraint the model read into a check.
type ConstraintCheck struct {
	Constraint  string `json:"constraint"`
	Check       string `json:"check"` // in words, e.g. "quantity" > 0
	Explanation string `json:"explanation,omitempty"`
}

// ConstraintOutput is the output of StageConstraint: the checks read, the
// constraints left as prompt text (with why), and the data context and
// schemas rendered again with the checks.
type ConstraintOutput struct {
	Checks           []ConstraintCheck `json:"checks,omitempty"`
	Unapplied        []string          `json:"unapplied,omitempty"` // "constraint: reason"
	DataContext      string            `json:"data_context"`
	GeneratedSchemas map[string]string `json:"generated_schemas,omitempty"`
}

// BuildInput is the input of StageBuild.
type BuildInput struct {
	Packages       []string `json:"packages"`
	SystemPackages []string `json:"system_packages"`
	// Name is the job's name (JobSpec.Name), if any: the docker backend
	// names the image after it (autocoder-env-<name>:<hash>).
	Name string `json:"name,omitempty"`
}

// BuildOutput is the output of StageBuild.
type BuildOutput struct {
	Image string `json:"image"` // backend-specific environment reference
	Log   string `json:"log,omitempty"`
	// InvalidPackages lists packages the index or apt could not find; the build failed.
	InvalidPackages []string `json:"invalid_packages,omitempty"`
	// Stdlib is the sandbox interpreter's standard library
	// (sys.stdlib_module_names), sorted, so the import scan leaves out what
	// the target Python itself provides; empty when the worker could not
	// ask its interpreter.
	Stdlib []string `json:"stdlib,omitempty"`
	// Provenance lists what the build fetched: each distribution pip
	// installed (URL as the build saw it, never with credentials, and
	// SHA-256), and what flowed through the worker's egress proxy (bytes;
	// SHA-256 for plain-HTTP downloads; "connect://host:port" for TLS
	// tunnels). Empty when nothing was fetched or the environment was
	// built before; absent from older workers' outputs.
	Provenance []Artifact `json:"provenance,omitempty"`
}

// Artifact is one entry of BuildOutput.Provenance.
type Artifact struct {
	URL    string `json:"url"`
	SHA256 string `json:"sha256,omitempty"`
	Bytes  int64  `json:"bytes,omitempty"`
}

// RunTestsInput is the input of StageRunTests.
type RunTestsInput struct {
	Image string `json:"image"`
	// Env is the package set Image was built for: a worker that does not
	// have the environment (another machine built it) builds it again.
	Env       BuildInput  `json:"env"`
	Code      string      `json:"code"`
	Tests     string      `json:"tests"`
	Samples   []SampleRef `json:"samples,omitempty"`
	Timeout   Duration    `json:"timeout"`
	Resources Resources   `json:"resources"`
}

// TestOutcome is the outcome of one test case.
type TestOutcome string

const (
	OutcomePassed  TestOutcome = "passed"
	OutcomeFailed  TestOutcome = "failed"
	OutcomeError   TestOutcome = "error"
	OutcomeSkipped TestOutcome = "skipped"
)

// TestCase is one test from the JUnit XML report.
type TestCase struct {
	Name      string      `json:"name"`
	ClassName string      `json:"classname,omitempty"`
	Outcome   TestOutcome `json:"outcome"`
	Message   string      `json:"message,omitempty"`
	Details   string      `json:"details,omitempty"` // trimmed traceback
}

// TestReport is the output of StageRunTests.
type TestReport struct {
	Passed   int        `json:"passed"`
	Failed   int        `json:"failed"`
	Errors   int        `json:"errors"`
	Skipped  int        `json:"skipped"`
	Cases    []TestCase `json:"cases,omitempty"`
	ExitCode int        `json:"exit_code"`
	TimedOut bool       `json:"timed_out,omitempty"`
	// Output is pytest's stdout and stderr, trimmed to the head and tail.
	Output string `json:"output,omitempty"`
}

// OK reports whether every test passed and at least one ran.
func (r TestReport) OK() bool {
	return r.ExitCode == 0 && !r.TimedOut && r.Failed == 0 && r.Errors == 0 && r.Passed > 0
}

// Hermetic reports whether the report follows from the code and tests
// alone: not when the run timed out or was killed (see killedExit), which
// depends on the machine's load as well. Workers do not cache such reports.
func (r TestReport) Hermetic() bool { return !r.TimedOut && !killedExit(r.ExitCode) }

// AcceptanceInput is the input of StageAcceptance and StageRun.
type AcceptanceInput struct {
	Image     string            `json:"image"`
	Env       BuildInput        `json:"env"` // as in RunTestsInput
	Code      string            `json:"code"`
	Samples   []SampleRef       `json:"samples,omitempty"`
	Args      map[string]string `json:"args,omitempty"` // non-file inputs, passed as --name value
	Outputs   map[string]Type   `json:"outputs,omitempty"`
	Timeout   Duration          `json:"timeout"`
	Resources Resources         `json:"resources"`
	// CheckImports checks, in the sandbox and before the run, that every
	// module the script imports can be found (the code runner): a missing
	// one is reported in MissingModules and the script does not run.
	CheckImports bool `json:"check_imports,omitempty"`
}

// MissingModule is a module a script imports that its environment lacks,
// with the package that provides it (the module's own name when no table
// knows better).
type MissingModule struct {
	Module  string `json:"module"`
	Package string `json:"package"`
}

// AcceptanceOutput is the output of StageAcceptance and StageRun.
type AcceptanceOutput struct {
	OK       bool           `json:"ok"`
	Outputs  map[string]any `json:"outputs,omitempty"` // typed values
	Problems []string       `json:"problems,omitempty"`
	ExitCode int            `json:"exit_code"`
	Output   string         `json:"output,omitempty"` // trimmed stdout+stderr
	TimedOut bool           `json:"timed_out,omitempty"`
	// MissingModules are what the import check found missing (the script
	// did not run).
	MissingModules []MissingModule `json:"missing_modules,omitempty"`
}

// Hermetic reports whether the outcome follows from the script and its
// inputs alone (see TestReport.Hermetic).
func (o AcceptanceOutput) Hermetic() bool { return !o.TimedOut && !killedExit(o.ExitCode) }

// killedExit reports an exit status that means the process was killed
// rather than exiting: 137 (128+SIGKILL, the kernel's OOM killer or the
// sandbox's own kill) or a negative status (a signal, as Go reports it).
func killedExit(code int) bool { return code == 128+9 || code < 0 }

// PackageReplacementInput is the input of StagePackageReplacement.
type PackageReplacementInput struct {
	Package string   `json:"package"`       // the name the build could not find
	Kind    string   `json:"kind"`          // "pip" or "apt"
	Log     string   `json:"log,omitempty"` // the build's complaint, trimmed
	Tried   []string `json:"tried,omitempty"`
	Imports []string `json:"imports,omitempty"` // what the code imports, for context
}

// PackageReplacement is the `package_replacement` structured reply: a
// package to install instead, or null to go without.
type PackageReplacement struct {
	Replacement *string `json:"replacement"`
}
