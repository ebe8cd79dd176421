package llmstages

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/docsearch"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/prompts"
	"github.com/autocoder/autocoder/internal/pyscan"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

// ErrBadInput means the command cannot be handled however often it is
// retried: an input that lacks what the stage needs. It comes marked
// permanent (bus.Permanent).
var ErrBadInput = errors.New("llmstages: bad input")

// ErrPromptTooLarge means the messages assembled for a stage exceed
// Config.MaxPromptBytes. Nothing is sent; the stage fails permanently, as
// the same input would assemble the same prompt.
var ErrPromptTooLarge = errors.New("llmstages: prompt too large")

// DefaultMaxPromptBytes is Config.MaxPromptBytes's default (256 KiB): many
// times a normal stage prompt (prompt, sample rows, code, a trimmed test
// report), well below what costs real money per call.
const DefaultMaxPromptBytes = 256 << 10

// Config configures Handlers. The zero value of every field but Client
// means its default.
type Config struct {
	// Client makes the model calls. Required. Tool-calling stages
	// (agent_turn) need one that is also a ChatClient.
	Client llm.Client
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
	// Logger receives what the handlers warn about. Nil discards it.
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

// Handlers handle the LLM stages. They are safe for concurrent use.
type Handlers struct {
	client  llm.Client
	cfg     Config
	std     pyscan.Set
	log     *slog.Logger
	corpora corpora // context.go
}

// New validates cfg and returns the handlers.
func New(cfg Config) (*Handlers, error) {
	if cfg.Client == nil {
		return nil, errors.New("llmstages: Config.Client is required")
	}
	if cfg.MaxTokens < 0 || cfg.ContextBytes < 0 || cfg.ChunkBytes < 0 {
		return nil, errors.New("llmstages: MaxTokens, ContextBytes and ChunkBytes must not be negative")
	}
	cfg.Model = cmp.Or(cfg.Model, messages.DefaultModel)
	cfg.MaxPromptBytes = cmp.Or(cfg.MaxPromptBytes, DefaultMaxPromptBytes)
	cfg.ContextBytes = cmp.Or(cfg.ContextBytes, DefaultContextBytes)
	cfg.ChunkBytes = cmp.Or(cfg.ChunkBytes, DefaultChunkBytes)
	h := &Handlers{client: cfg.Client, cfg: cfg, std: cfg.Stdlib, log: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))}
	if h.std == nil {
		h.std = pyscan.Stdlib()
	}
	return h, nil
}

// Register puts the LLM stages on mux. Each names what shapes its output
// besides its own code (stagework.DependsOn): the prompt texts, the
// import-scan tables, the reply's schema, and for the stages that put a
// job's documentation in their prompt, how it is chunked and retrieved.
func (h *Handlers) Register(mux *stagework.Mux) {
	docs := stagework.DependsOn("docs", fmt.Sprintf("%s-%d-%d", docsearch.Version, h.cfg.ContextBytes, h.cfg.ChunkBytes))
	stagework.Register(mux, messages.StagePlan, h.plan, replyDeps(llm.PlanSchema, docs)...)
	stagework.Register(mux, messages.StageCode, h.code, replyDeps(llm.SolutionSchema, docs, schemaDep("inline_plan_schema", llm.PlannedSolutionSchema))...)
	stagework.Register(mux, messages.StageTests, h.tests, replyDeps(llm.TestsSchema)...)
	stagework.Register(mux, messages.StagePackages, h.packages, replyDeps(llm.PackagesSchema)...)
	stagework.Register(mux, messages.StageDiagnose, h.diagnose, replyDeps(llm.DiagnosisSchema)...)
	stagework.Register(mux, messages.StageFix, h.fix, replyDeps(llm.SolutionSchema, docs)...)
	stagework.Register(mux, messages.StagePatchTests, h.patchTests, replyDeps(llm.TestPatchesSchema)...)
	stagework.Register(mux, messages.StageVerify, h.verify, replyDeps(llm.FixVerificationSchema)...)
	stagework.Register(mux, messages.StageConstraint, h.constraint, replyDeps(llm.ConstraintSchema)...)
	stagework.Register(mux, messages.StagePackageReplacement, h.packageReplacement, replyDeps(llm.PackageReplacementSchema)...)
	stagework.Register(mux, messages.StageAgentTurn, h.agentTurn, agentDeps()...)                            // agent.go
	stagework.Register(mux, messages.StageStrengthenTests, h.strengthenTests, replyDeps(llm.TestsSchema)...) // strength.go
}

// replyDeps are what a structured stage depends on: the prompts, the scan
// tables and the reply's schema (its name and a hash of its text).
func replyDeps(s llm.Schema, more ...stagework.Option) []stagework.Option {
	return append([]stagework.Option{
		stagework.DependsOn("prompts", prompts.Version),
		stagework.DependsOn("pyscan", pyscan.Version),
		schemaDep("schema", s),
	}, more...)
}

// schemaDep is a dependency on a reply schema: its name and a hash of its text.
func schemaDep(key string, s llm.Schema) stagework.Option {
	sum := sha256.Sum256(s.Schema)
	return stagework.DependsOn(key, s.Name+"-"+hex.EncodeToString(sum[:6]))
}

func badInput(stage messages.Stage, format string, args ...any) error {
	return bus.Permanent(fmt.Errorf("%w: %s input: %s", ErrBadInput, stage, fmt.Sprintf(format, args...)))
}

// call makes the structured call of cmd's stage with schema and decodes
// the reply into out.Value, with the usage and the conversation.
func call[T any](ctx context.Context, h *Handlers, cmd *messages.StageCommand, schema llm.Schema, msgs []messages.ChatMessage) (stagework.Output[T], error) {
	return callChecked[T](ctx, h, cmd, schema, msgs, nil)
}

// callChecked is call with check, if not nil, judging each reply that
// fits the schema: its error goes back to the model as a correction, in
// the same call (llm.StructuredRequest.Check), instead of failing the
// stage (an empty program: real models put it in a fenced block after
// the JSON).
func callChecked[T any](ctx context.Context, h *Handlers, cmd *messages.StageCommand, schema llm.Schema, msgs []messages.ChatMessage, check func(T) error) (stagework.Output[T], error) {
	var out stagework.Output[T]
	model := cmp.Or(cmd.Model, h.cfg.Model)
	msgs = personalize(cmd, msgs) // settings.go
	if err := h.checkPromptSize(cmd.Stage, msgs); err != nil {
		return out, err
	}
	ctx = llm.WithStage(ctx, string(cmd.Stage)) // the model calls' stage label
	sampling, maxTokens := h.sampling(cmd)      // settings.go
	req := llm.StructuredRequest{Model: model, Messages: msgs, Schema: schema, MaxTokens: maxTokens, Sampling: sampling}
	if check != nil {
		req.Check = func(raw json.RawMessage) error {
			var v T
			if err := json.Unmarshal(raw, &v); err != nil {
				return err
			}
			return check(v)
		}
	}
	reply, err := h.client.Structured(ctx, req)
	out.Usage = reply.Usage
	if err != nil {
		return out, fmt.Errorf("%s: %w", cmd.Stage, err)
	}
	if err := json.Unmarshal(reply.JSON, &out.Value); err != nil {
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

// as is out with another value: a reply decoded as one type and
// returned as another (a plan with the context its prompt held).
func as[U, T any](out stagework.Output[T], v U) stagework.Output[U] {
	return stagework.Output[U]{Value: v, Usage: out.Usage, Messages: out.Messages, Notes: out.Notes}
}

// checkPromptSize is the one place every stage's prompt passes before it is
// sent: a prompt past Config.MaxPromptBytes (a huge task text, a sample
// file pasted whole) fails here instead of being paid for.
func (h *Handlers) checkPromptSize(stage messages.Stage, msgs []messages.ChatMessage) error {
	if h.cfg.MaxPromptBytes < 0 {
		return nil
	}
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
	}
	if n > h.cfg.MaxPromptBytes {
		return bus.Permanent(fmt.Errorf("%s: %w: %d KiB of messages, over the %d KiB budget (llmstages.Config.MaxPromptBytes)",
			stage, ErrPromptTooLarge, (n+1023)>>10, h.cfg.MaxPromptBytes>>10))
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

func (h *Handlers) plan(ctx context.Context, cmd *messages.StageCommand, in messages.PlanInput) (stagework.Output[planWithContext], error) {
	var none stagework.Output[planWithContext]
	if err := requireTask(cmd.Stage, in.Task); err != nil {
		return none, err
	}
	msgs, use, err := h.withContext(ctx, cmd.Stage, in.Task, in.Task.Prompt, prompts.Plan(in))
	if err != nil {
		return none, err
	}
	out, err := callChecked(ctx, h, cmd, llm.PlanSchema, msgs, func(p messages.Plan) error {
		if strings.TrimSpace(p.Description) == "" && strings.TrimSpace(p.Approach) == "" {
			return errors.New("the plan is empty: describe the task and the approach")
		}
		return nil
	})
	if err != nil {
		return as(out, planWithContext{}), err
	}
	p := out.Value
	p.Description, p.Approach = strings.TrimSpace(p.Description), strings.TrimSpace(p.Approach)
	if p.Description == "" && p.Approach == "" {
		return as(out, planWithContext{}), invalid(cmd.Stage, "empty plan")
	}
	return as(out, planWithContext{Plan: p, ContextUse: messages.ContextUse{Context: use}}), nil
}

func (h *Handlers) code(ctx context.Context, cmd *messages.StageCommand, in messages.CodeInput) (stagework.Output[solutionWithContext], error) {
	if err := requireTask(cmd.Stage, in.Task); err != nil {
		return stagework.Output[solutionWithContext]{}, err
	}
	msgs, use, err := h.withContext(ctx, cmd.Stage, in.Task, in.Task.Prompt, prompts.Code(in))
	if err != nil {
		return stagework.Output[solutionWithContext]{}, err
	}
	if in.PlanInline {
		return h.plannedSolution(ctx, cmd, msgs, use)
	}
	return h.solution(ctx, cmd, msgs, nil, use)
}

// plannedSolution is the one-round code call: the plan comes as a field
// of the solution reply. A model may leave it out or write it empty; the
// solution stands without it, with a note.
func (h *Handlers) plannedSolution(ctx context.Context, cmd *messages.StageCommand, msgs []messages.ChatMessage, use *messages.StageContext) (stagework.Output[solutionWithContext], error) {
	type reply struct {
		messages.Solution
		Plan *messages.Plan `json:"plan"`
	}
	out, err := callChecked(ctx, h, cmd, llm.PlannedSolutionSchema, msgs, func(r reply) error { return checkCode(r.Code) })
	if err != nil {
		return as(out, solutionWithContext{}), err
	}
	s, p := out.Value.Solution, out.Value.Plan
	n := normaliseSolution(&s, nil, h.std)
	if strings.TrimSpace(s.Code) == "" {
		return as(out, solutionWithContext{}), invalid(cmd.Stage, "empty code")
	}
	if p != nil {
		p.Description, p.Approach = strings.TrimSpace(p.Description), strings.TrimSpace(p.Approach)
	}
	if p == nil || (p.Description == "" && p.Approach == "") {
		n.add("the reply has no plan")
		p = nil
	}
	res := as(out, solutionWithContext{Solution: s, ContextUse: messages.ContextUse{Context: use}, Plan: p})
	res.Notes = n
	return res, nil
}

func (h *Handlers) fix(ctx context.Context, cmd *messages.StageCommand, in messages.FixInput) (stagework.Output[solutionWithContext], error) {
	var none stagework.Output[solutionWithContext]
	if strings.TrimSpace(in.Code) == "" {
		return none, badInput(cmd.Stage, "code is empty")
	}
	if len(in.Failures) == 0 {
		return none, badInput(cmd.Stage, "no failures to fix")
	}
	// Installed packages stay: the prompt calls them installed, so the model
	// may leave them out of its list.
	msgs, use, err := h.withContext(ctx, cmd.Stage, in.Task, reflectionQuery(in), prompts.Fix(in))
	if err != nil {
		return none, err
	}
	out, err := h.solution(ctx, cmd, msgs, in.Packages, use)
	if err != nil {
		return out, err
	}
	return h.avoidFailedFix(ctx, cmd, in, out)
}

func (h *Handlers) solution(ctx context.Context, cmd *messages.StageCommand, msgs []messages.ChatMessage, keep []string, use *messages.StageContext) (stagework.Output[solutionWithContext], error) {
	out, err := callChecked(ctx, h, cmd, llm.SolutionSchema, msgs, func(s messages.Solution) error { return checkCode(s.Code) })
	if err != nil {
		return as(out, solutionWithContext{}), err
	}
	s := out.Value
	out.Notes = normaliseSolution(&s, keep, h.std)
	if strings.TrimSpace(s.Code) == "" {
		return as(out, solutionWithContext{}), invalid(cmd.Stage, "empty code")
	}
	return as(out, solutionWithContext{Solution: s, ContextUse: messages.ContextUse{Context: use}}), nil
}

// checkCode refuses a reply whose program is empty, for a correction.
func checkCode(code string) error {
	if strings.TrimSpace(stripFences(code)) == "" {
		return errors.New(`the "code" field is empty: put the whole program in it`)
	}
	return nil
}

var importsSolutionRe = regexp.MustCompile(`(?m)^\s*(from\s+solution\s+import|import\s+solution\b)`)

func (h *Handlers) tests(ctx context.Context, cmd *messages.StageCommand, in messages.TestsInput) (stagework.Output[messages.Tests], error) {
	if err := requireTask(cmd.Stage, in.Task); err != nil {
		return stagework.Output[messages.Tests]{}, err
	}
	out, err := callChecked(ctx, h, cmd, llm.TestsSchema, prompts.Tests(in), func(t messages.Tests) error {
		if strings.TrimSpace(stripFences(t.Code)) == "" {
			return errors.New(`the "code" field is empty: put the whole pytest file in it`)
		}
		return nil
	})
	if err != nil {
		return out, err
	}
	return normalizeTests(cmd.Stage, out)
}

// normalizeTests takes a `tests` reply: fences stripped, empty refused, a
// file that imports nothing from solution noted.
func normalizeTests(stage messages.Stage, out stagework.Output[messages.Tests]) (stagework.Output[messages.Tests], error) {
	var n notes
	if hasFence(out.Value.Code) {
		n.add("removed a Markdown fence around the tests")
	}
	out.Value.Code = stripFences(out.Value.Code)
	if out.Value.Code == "" {
		return out, invalid(stage, "empty tests")
	}
	if !importsSolutionRe.MatchString(out.Value.Code) {
		n.add("the tests do not import from solution")
	}
	out.Notes = n
	return out, nil
}

var moduleNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// packages resolves what the static tables can and asks the model only
// about the rest; with nothing left to ask it makes no call.
func (h *Handlers) packages(ctx context.Context, cmd *messages.StageCommand, in messages.PackagesInput) (stagework.Output[messages.Packages], error) {
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
		return stagework.Output[messages.Packages]{Value: messages.Packages{Packages: cleanPackages(dists, std, "package", &n)}, Notes: n}, nil
	}
	out, err := call[messages.Packages](ctx, h, cmd, llm.PackagesSchema, prompts.Packages(messages.PackagesInput{Imports: unknown}))
	if err != nil {
		return out, err
	}
	out.Value.Packages = cleanPackages(append(dists, out.Value.Packages...), std, "package", &n)
	out.Notes = n
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

func (h *Handlers) diagnose(ctx context.Context, cmd *messages.StageCommand, in messages.DiagnoseInput) (stagework.Output[messages.Diagnosis], error) {
	if strings.TrimSpace(in.Code) == "" && strings.TrimSpace(in.Tests) == "" {
		return stagework.Output[messages.Diagnosis]{}, badInput(cmd.Stage, "code and tests are empty")
	}
	if in.Report.OK() {
		// Nothing failed: an empty diagnosis is the truth, and free.
		return stagework.Output[messages.Diagnosis]{Value: messages.Diagnosis{Failures: []messages.Failure{}, NeedsPackages: []string{}, NeedsSystemPackages: []string{}},
			Notes: []string{"the report has no failures: nothing to diagnose"}}, nil
	}
	out, err := call[messages.Diagnosis](ctx, h, cmd, llm.DiagnosisSchema, prompts.Diagnose(in))
	if err != nil {
		return out, err
	}
	out.Notes = normaliseDiagnosis(&out.Value, in.Report, in.Code, in.Tests, h.stdlib(in.Stdlib))
	return out, nil
}

func (h *Handlers) patchTests(ctx context.Context, cmd *messages.StageCommand, in messages.PatchTestsInput) (stagework.Output[messages.PatchTestsOutput], error) {
	if strings.TrimSpace(in.Tests) == "" {
		return stagework.Output[messages.PatchTestsOutput]{}, badInput(cmd.Stage, "tests are empty")
	}
	if len(in.Failures) == 0 {
		return stagework.Output[messages.PatchTestsOutput]{}, badInput(cmd.Stage, "no failures to patch")
	}
	reply, err := call[messages.TestPatches](ctx, h, cmd, llm.TestPatchesSchema, prompts.PatchTests(in))
	if err != nil {
		return as(reply, messages.PatchTestsOutput{}), err
	}
	var n notes
	patches := []messages.TestPatch{}
	for _, p := range reply.Value.Patches {
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
	out := as(reply, messages.PatchTestsOutput{Patches: patches, Tests: tests, Unapplied: unapplied, Reasons: reasons})
	out.Notes = n
	return out, nil
}

func (h *Handlers) verify(ctx context.Context, cmd *messages.StageCommand, in messages.VerifyInput) (stagework.Output[messages.FixVerification], error) {
	if strings.TrimSpace(in.NewCode) == "" {
		return stagework.Output[messages.FixVerification]{}, badInput(cmd.Stage, "new_code is empty")
	}
	if len(in.Failures) == 0 {
		return stagework.Output[messages.FixVerification]{}, badInput(cmd.Stage, "no failures to verify")
	}
	if strings.TrimSpace(in.OldCode) == strings.TrimSpace(in.NewCode) {
		// No change cannot have applied a fix; no need to ask.
		return stagework.Output[messages.FixVerification]{Value: messages.FixVerification{
			AllFixesApplied: false,
			MissingFixes:    suggestedFixes(in.Failures),
			Explanation:     "The code did not change, so none of the fixes was applied.",
		}, Notes: []string{"the code did not change: verified without a model call"}}, nil
	}
	out, err := call[messages.FixVerification](ctx, h, cmd, llm.FixVerificationSchema, prompts.Verify(in))
	if err != nil {
		return out, err
	}
	out.Notes = normaliseVerification(&out.Value, in.Failures)
	return out, nil
}
