package llmstages

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/prompts"
	"github.com/autocoder/autocoder/internal/pyscan"
	"github.com/autocoder/autocoder/pkg/messages"
)

// ErrBadInput means the command cannot be handled however often it is
// retried: malformed or incomplete input JSON, a message from a newer schema
// version, or a stage that is not an LLM stage. Callers map it to a
// permanent failure (messages.ErrorPermanent).
var ErrBadInput = errors.New("llmstages: bad input")

// ErrPromptTooLarge means the messages assembled for a stage exceed
// Options.MaxPromptBytes. Nothing is sent; the stage fails permanently, as
// the same input would assemble the same prompt.
var ErrPromptTooLarge = errors.New("llmstages: prompt too large")

// DefaultMaxPromptBytes is Options.MaxPromptBytes's default (256 KiB): many
// times a normal stage prompt (prompt, sample rows, code, a trimmed test
// report), well below what costs real money per call.
const DefaultMaxPromptBytes = 256 << 10

// normVersion identifies the normalisation rules in this package; it is part
// of StageVersion because they shape the cached outputs too.
const normVersion = "3"

// Options configure Handlers. The zero value is ready to use.
type Options struct {
	// Model is used when a command names none. Default messages.DefaultModel.
	Model string
	// MaxTokens caps each reply; zero means the server's default.
	MaxTokens int
	// MaxPromptBytes bounds the messages of one call (the sum of their
	// contents); a larger prompt fails the stage with ErrPromptTooLarge
	// before it is sent. Zero means DefaultMaxPromptBytes; negative, no bound.
	MaxPromptBytes int
	// Stdlib is the sandbox interpreter's standard library (pyscan.StdlibFrom),
	// used to drop standard modules from package lists. Nil means CPython 3.11.
	Stdlib pyscan.Set
	// Logger receives a line per normalisation note. Nil discards them.
	Logger *slog.Logger
	// Context fetches jobs' documentation bundles (context.go); nil: a job
	// with context fails its plan, code and fix stages.
	Context ContextSource
	// ContextBytes is how much documentation one prompt holds; past it the
	// best-matching chunks are retrieved. Zero means DefaultContextBytes.
	ContextBytes int
	// ChunkBytes is the size of a documentation chunk. Zero means DefaultChunkBytes.
	ChunkBytes int
	// FailedRuns, if set, is the negative cache a fix is checked against
	// (failedfix.go).
	FailedRuns FailedRunChecker
}

// Output is a handled stage.
type Output struct {
	// Value is the stage's output struct (messages.Plan, messages.Solution,
	// ...), for the caller to marshal into the StageResult.
	Value any
	// Usage counts every model call, retries included; zero when the stage
	// needed no call. It is set on errors too, so spent tokens are counted.
	Usage messages.Usage
	// Messages is the conversation, the assistant's reply last, each with
	// Stage set; nil when the stage needed no call.
	Messages []messages.ChatMessage
	// Notes says what normalisation changed in the reply (dropped package
	// names, a default failure added, ...), for logs and the job's history.
	Notes []string
}

// Handlers handle the LLM stages. They are safe for concurrent use.
type Handlers struct {
	client  llm.Client
	opts    Options
	std     pyscan.Set
	log     *slog.Logger
	corpora corpora // context.go
}

// New returns Handlers that call client. It panics if client is nil.
func New(client llm.Client, opts Options) *Handlers {
	if client == nil {
		panic("llmstages: New with a nil client")
	}
	h := &Handlers{client: client, opts: opts, std: opts.Stdlib, log: opts.Logger}
	if h.opts.Model == "" {
		h.opts.Model = messages.DefaultModel
	}
	if h.opts.MaxPromptBytes == 0 {
		h.opts.MaxPromptBytes = DefaultMaxPromptBytes
	}
	if h.std == nil {
		h.std = pyscan.Stdlib()
	}
	if h.opts.ContextBytes <= 0 {
		h.opts.ContextBytes = DefaultContextBytes
	}
	if h.opts.ChunkBytes <= 0 {
		h.opts.ChunkBytes = DefaultChunkBytes
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	return h
}

// stageSchema is the reply structure of each LLM stage.
func stageSchema(stage messages.Stage) (llm.Schema, bool) {
	switch stage {
	case messages.StagePlan:
		return llm.PlanSchema, true
	case messages.StageCode, messages.StageFix:
		return llm.SolutionSchema, true
	case messages.StageTests, messages.StageStrengthenTests:
		return llm.TestsSchema, true
	case messages.StagePackages:
		return llm.PackagesSchema, true
	case messages.StageDiagnose:
		return llm.DiagnosisSchema, true
	case messages.StagePatchTests:
		return llm.TestPatchesSchema, true
	case messages.StageVerify:
		return llm.FixVerificationSchema, true
	case messages.StageConstraint:
		return llm.ConstraintSchema, true
	case messages.StagePackageReplacement:
		return llm.PackageReplacementSchema, true
	}
	return llm.Schema{}, false
}

// StageVersion identifies everything besides the input that decides a
// stage's output: prompt texts, the reply schema, the scan tables and the
// normalisation rules. It belongs in the stage's cache key. It is "" for a
// stage these handlers do not handle.
func StageVersion(stage messages.Stage) string {
	if stage == messages.StageAgentTurn {
		return agentVersion() // agent.go
	}
	s, ok := stageSchema(stage)
	if !ok {
		return ""
	}
	sum := sha256.Sum256(s.Schema)
	return fmt.Sprintf("%s/prompts%s.pyscan%s.norm%s/%s@%s", stage, prompts.Version, pyscan.Version, normVersion, s.Name, hex.EncodeToString(sum[:6]))
}

// Handle runs one LLM stage command. Errors wrap ErrBadInput for commands
// that cannot succeed, llm.ErrInvalidReply for replies that are unusable
// even after normalisation, and the client's errors otherwise.
func (h *Handlers) Handle(ctx context.Context, cmd *messages.StageCommand) (Output, error) {
	if cmd == nil {
		return Output{}, fmt.Errorf("%w: nil command", ErrBadInput)
	}
	if cmd.V > messages.SchemaVersion {
		return Output{}, fmt.Errorf("%w: %s command has schema version %d, newer than %d", ErrBadInput, cmd.Stage, cmd.V, messages.SchemaVersion)
	}
	ctx = llm.WithStage(ctx, string(cmd.Stage)) // the model calls' stage label
	switch cmd.Stage {
	case messages.StagePlan:
		return handle(ctx, h, cmd, h.plan)
	case messages.StageCode:
		return handle(ctx, h, cmd, h.code)
	case messages.StageTests:
		return handle(ctx, h, cmd, h.tests)
	case messages.StageStrengthenTests:
		return handle(ctx, h, cmd, h.strengthenTests) // strength.go
	case messages.StagePackages:
		return handle(ctx, h, cmd, h.packages)
	case messages.StageDiagnose:
		return handle(ctx, h, cmd, h.diagnose)
	case messages.StageFix:
		return handle(ctx, h, cmd, h.fix)
	case messages.StagePatchTests:
		return handle(ctx, h, cmd, h.patchTests)
	case messages.StageVerify:
		return handle(ctx, h, cmd, h.verify)
	case messages.StageConstraint:
		return handle(ctx, h, cmd, h.constraint)
	case messages.StagePackageReplacement:
		return handle(ctx, h, cmd, h.packageReplacement)
	case messages.StageAgentTurn:
		return handle(ctx, h, cmd, h.agentTurn) // agent.go
	}
	return Output{}, fmt.Errorf("%w: %q is not an LLM stage", ErrBadInput, cmd.Stage)
}

// handle decodes the command's input into In and runs fn, then logs notes.
func handle[In any](ctx context.Context, h *Handlers, cmd *messages.StageCommand, fn func(context.Context, *messages.StageCommand, In) (Output, error)) (Output, error) {
	var in In
	raw := bytes.TrimSpace(cmd.Input)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return Output{}, fmt.Errorf("%w: %s command has no input", ErrBadInput, cmd.Stage)
	}
	// Unknown fields are allowed: a newer coordinator of the same schema
	// version may add optional ones.
	if err := json.Unmarshal(raw, &in); err != nil {
		return Output{}, fmt.Errorf("%w: decode %s input: %v", ErrBadInput, cmd.Stage, err)
	}
	out, err := fn(ctx, cmd, in)
	for _, note := range out.Notes {
		h.log.InfoContext(ctx, "normalised model reply", "job_id", cmd.JobID, "stage", cmd.Stage, "seq", cmd.Seq, "note", note)
	}
	return out, err
}

func badInput(stage messages.Stage, format string, args ...any) error {
	return fmt.Errorf("%w: %s input: %s", ErrBadInput, stage, fmt.Sprintf(format, args...))
}

// call makes the structured call and decodes the reply into dst.
func (h *Handlers) call(ctx context.Context, cmd *messages.StageCommand, msgs []messages.ChatMessage, dst any) (Output, error) {
	schema, _ := stageSchema(cmd.Stage)
	model := cmd.Model
	if model == "" {
		model = h.opts.Model
	}
	if err := h.checkPromptSize(cmd.Stage, msgs); err != nil {
		return Output{}, err
	}
	reply, err := h.client.Structured(ctx, llm.StructuredRequest{Model: model, Messages: msgs, Schema: schema, MaxTokens: h.opts.MaxTokens})
	out := Output{Usage: reply.Usage}
	if err != nil {
		return out, fmt.Errorf("%s: %w", cmd.Stage, err)
	}
	if err := json.Unmarshal(reply.JSON, dst); err != nil {
		return out, fmt.Errorf("%s: %w: decode %s reply: %v", cmd.Stage, llm.ErrInvalidReply, schema.Name, err)
	}
	content := reply.Raw
	if content == "" {
		content = string(reply.JSON)
	}
	out.Messages = make([]messages.ChatMessage, 0, len(msgs)+1)
	for _, m := range msgs {
		m.Stage = cmd.Stage
		out.Messages = append(out.Messages, m)
	}
	out.Messages = append(out.Messages, messages.ChatMessage{Role: "assistant", Content: content, Stage: cmd.Stage})
	return out, nil
}

// checkPromptSize is the one place every stage's prompt passes before it is
// sent: a prompt past Options.MaxPromptBytes (a huge task text, a sample
// file pasted whole) fails here instead of being paid for.
func (h *Handlers) checkPromptSize(stage messages.Stage, msgs []messages.ChatMessage) error {
	if h.opts.MaxPromptBytes < 0 {
		return nil
	}
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
	}
	if n > h.opts.MaxPromptBytes {
		return fmt.Errorf("%s: %w: %d KiB of messages, over the %d KiB budget (llmstages.Options.MaxPromptBytes)",
			stage, ErrPromptTooLarge, (n+1023)>>10, h.opts.MaxPromptBytes>>10)
	}
	return nil
}

func invalid(stage messages.Stage, what string) error {
	return fmt.Errorf("%s: %w: %s", stage, llm.ErrInvalidReply, what)
}

func requireTask(stage messages.Stage, t messages.TaskSpec) error {
	if strings.TrimSpace(t.Prompt) == "" {
		return badInput(stage, "task.prompt is empty")
	}
	return nil
}

func (h *Handlers) plan(ctx context.Context, cmd *messages.StageCommand, in messages.PlanInput) (Output, error) {
	if err := requireTask(cmd.Stage, in.Task); err != nil {
		return Output{}, err
	}
	msgs, use, err := h.withContext(ctx, cmd.Stage, in.Task, in.Task.Prompt, prompts.Plan(in))
	if err != nil {
		return Output{}, err
	}
	var p messages.Plan
	out, err := h.call(ctx, cmd, msgs, &p)
	if err != nil {
		return out, err
	}
	p.Description, p.Approach = strings.TrimSpace(p.Description), strings.TrimSpace(p.Approach)
	if p.Description == "" && p.Approach == "" {
		return out, invalid(cmd.Stage, "empty plan")
	}
	out.Value = p
	if use != nil {
		out.Value = planWithContext{Plan: p, ContextUse: messages.ContextUse{Context: use}}
	}
	return out, nil
}

func (h *Handlers) code(ctx context.Context, cmd *messages.StageCommand, in messages.CodeInput) (Output, error) {
	if err := requireTask(cmd.Stage, in.Task); err != nil {
		return Output{}, err
	}
	msgs, use, err := h.withContext(ctx, cmd.Stage, in.Task, in.Task.Prompt, prompts.Code(in))
	if err != nil {
		return Output{}, err
	}
	return h.solution(ctx, cmd, msgs, nil, use)
}

func (h *Handlers) fix(ctx context.Context, cmd *messages.StageCommand, in messages.FixInput) (Output, error) {
	if strings.TrimSpace(in.Code) == "" {
		return Output{}, badInput(cmd.Stage, "code is empty")
	}
	if len(in.Failures) == 0 {
		return Output{}, badInput(cmd.Stage, "no failures to fix")
	}
	// Installed packages stay: the prompt calls them installed, so the model
	// may leave them out of its list.
	msgs, use, err := h.withContext(ctx, cmd.Stage, in.Task, reflectionQuery(in), prompts.Fix(in))
	if err != nil {
		return Output{}, err
	}
	out, err := h.solution(ctx, cmd, msgs, in.Packages, use)
	if err != nil {
		return out, err
	}
	return h.avoidFailedFix(ctx, cmd, in, out)
}

func (h *Handlers) solution(ctx context.Context, cmd *messages.StageCommand, msgs []messages.ChatMessage, keep []string, use *messages.StageContext) (Output, error) {
	var s messages.Solution
	out, err := h.call(ctx, cmd, msgs, &s)
	if err != nil {
		return out, err
	}
	out.Notes = normaliseSolution(&s, keep, h.std)
	if strings.TrimSpace(s.Code) == "" {
		return out, invalid(cmd.Stage, "empty code")
	}
	out.Value = s
	if use != nil {
		out.Value = solutionWithContext{Solution: s, ContextUse: messages.ContextUse{Context: use}}
	}
	return out, nil
}

var importsSolutionRe = regexp.MustCompile(`(?m)^\s*(from\s+solution\s+import|import\s+solution\b)`)

func (h *Handlers) tests(ctx context.Context, cmd *messages.StageCommand, in messages.TestsInput) (Output, error) {
	if err := requireTask(cmd.Stage, in.Task); err != nil {
		return Output{}, err
	}
	var t messages.Tests
	out, err := h.call(ctx, cmd, prompts.Tests(in), &t)
	if err != nil {
		return out, err
	}
	return normalizeTests(cmd.Stage, out, t)
}

// normalizeTests takes a `tests` reply: fences stripped, empty refused, a
// file that imports nothing from solution noted.
func normalizeTests(stage messages.Stage, out Output, t messages.Tests) (Output, error) {
	var n notes
	if hasFence(t.Code) {
		n.add("removed a Markdown fence around the tests")
	}
	t.Code = stripFences(t.Code)
	if t.Code == "" {
		return out, invalid(stage, "empty tests")
	}
	if !importsSolutionRe.MatchString(t.Code) {
		n.add("the tests do not import from solution")
	}
	out.Notes, out.Value = n, t
	return out, nil
}

var moduleNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// packages resolves what the static tables can and asks the model only
// about the rest; with nothing left to ask it makes no call.
func (h *Handlers) packages(ctx context.Context, cmd *messages.StageCommand, in messages.PackagesInput) (Output, error) {
	var n notes
	var imports []string
	for _, imp := range in.Imports {
		if imp = strings.TrimSpace(imp); moduleNameRe.MatchString(imp) {
			imports = append(imports, imp)
		} else {
			n.add("ignored invalid import name %q", imp)
		}
	}
	std := h.stdlib(in.Stdlib)
	dists, unknown := pyscan.Resolver{Stdlib: std}.Distributions(imports)
	if len(unknown) == 0 {
		return Output{Value: messages.Packages{Packages: cleanPackages(dists, std, "package", &n)}, Notes: n}, nil
	}
	var p messages.Packages
	out, err := h.call(ctx, cmd, prompts.Packages(messages.PackagesInput{Imports: unknown}), &p)
	if err != nil {
		return out, err
	}
	p.Packages = cleanPackages(append(dists, p.Packages...), std, "package", &n)
	out.Notes, out.Value = n, p
	return out, nil
}

// stdlib is the target sandbox's standard library when the command carries
// it (the coordinator learned it from a build), else the worker's own.
func (h *Handlers) stdlib(target []string) pyscan.Set {
	if len(target) > 0 {
		return pyscan.NewSet(target...)
	}
	return h.std
}

func (h *Handlers) diagnose(ctx context.Context, cmd *messages.StageCommand, in messages.DiagnoseInput) (Output, error) {
	if strings.TrimSpace(in.Code) == "" && strings.TrimSpace(in.Tests) == "" {
		return Output{}, badInput(cmd.Stage, "code and tests are empty")
	}
	if in.Report.OK() {
		// Nothing failed: an empty diagnosis is the truth, and free.
		return Output{Value: messages.Diagnosis{Failures: []messages.Failure{}, NeedsPackages: []string{}, NeedsSystemPackages: []string{}},
			Notes: []string{"the report has no failures: nothing to diagnose"}}, nil
	}
	var d messages.Diagnosis
	out, err := h.call(ctx, cmd, prompts.Diagnose(in), &d)
	if err != nil {
		return out, err
	}
	out.Notes = normaliseDiagnosis(&d, in.Report, h.stdlib(in.Stdlib))
	out.Value = d
	return out, nil
}

func (h *Handlers) patchTests(ctx context.Context, cmd *messages.StageCommand, in messages.PatchTestsInput) (Output, error) {
	if strings.TrimSpace(in.Tests) == "" {
		return Output{}, badInput(cmd.Stage, "tests are empty")
	}
	if len(in.Failures) == 0 {
		return Output{}, badInput(cmd.Stage, "no failures to patch")
	}
	var tp messages.TestPatches
	out, err := h.call(ctx, cmd, prompts.PatchTests(in), &tp)
	if err != nil {
		return out, err
	}
	var n notes
	patches := []messages.TestPatch{}
	for _, p := range tp.Patches {
		if hasFence(p.FixedCode) {
			n.add("removed a Markdown fence around the patch of %s", p.TestName)
		}
		p.FixedCode = stripFences(p.FixedCode)
		patches = append(patches, p)
	}
	failing := make([]string, len(in.Failures))
	for i, f := range in.Failures {
		failing[i] = f.TestName
	}
	tests, refused, spliceNotes := splice(in.Tests, patches, failing)
	var unapplied, reasons []string
	for _, r := range refused {
		n.add("patch of %q not applied: %s", r.Name, r.Reason)
		unapplied = append(unapplied, r.Name)
		reasons = append(reasons, r.Name+": "+r.Reason)
	}
	for _, sn := range spliceNotes {
		n.add("%s", sn)
	}
	if len(patches) == 0 {
		n.add("the model returned no patches")
	}
	out.Notes = n
	out.Value = messages.PatchTestsOutput{Patches: patches, Tests: tests, Unapplied: unapplied, Reasons: reasons}
	return out, nil
}

func (h *Handlers) verify(ctx context.Context, cmd *messages.StageCommand, in messages.VerifyInput) (Output, error) {
	if strings.TrimSpace(in.NewCode) == "" {
		return Output{}, badInput(cmd.Stage, "new_code is empty")
	}
	if len(in.Failures) == 0 {
		return Output{}, badInput(cmd.Stage, "no failures to verify")
	}
	if strings.TrimSpace(in.OldCode) == strings.TrimSpace(in.NewCode) {
		// No change cannot have applied a fix; no need to ask.
		return Output{Value: messages.FixVerification{
			AllFixesApplied: false,
			MissingFixes:    suggestedFixes(in.Failures),
			Explanation:     "The code did not change, so none of the fixes was applied.",
		}, Notes: []string{"the code did not change: verified without a model call"}}, nil
	}
	var v messages.FixVerification
	out, err := h.call(ctx, cmd, prompts.Verify(in), &v)
	if err != nil {
		return out, err
	}
	out.Notes = normaliseVerification(&v, in.Failures)
	out.Value = v
	return out, nil
}
