package stagework

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// A stage is one row of the stage table (messages.StageTable) and one
// typed handler registered on a pool's Mux, as asynq's ServeMux and River's
// Worker[T] do it:
//
//	mux := stagework.NewMux(messages.DefaultStages())
//	stagework.Register(mux, messages.StagePlan, h.plan, stagework.DependsOn("prompts", prompts.Version))
//
// The mux decodes a command's input into the handler's In (input that does
// not decode is a permanent failure), runs the handler and encodes its Out.
// The executor calls it directly: bus worker, executor, typed handler, and
// no layer between (layers_test.go keeps it so).

// Output is what a stage handler produced.
type Output[T any] struct {
	// Value is the stage's output, sent as JSON on the result.
	Value T
	// Usage counts the model calls the stage paid for, retries included;
	// set on errors too, so spent tokens are counted.
	Usage messages.Usage
	// Messages is the model conversation (LLM stages), for the job's
	// conversation history.
	Messages []messages.ChatMessage
	// Notes say what the handler changed in a model's reply (dropped
	// package names, a default failure added, ...); the executor logs them.
	Notes []string
}

// Func is a typed stage handler: it does one command of its stage, whose
// input the mux has decoded into in. A handler says what a failure means
// by the error it returns (policy.go): bus.Permanent fails the stage at
// once, bus.RetryAfter asks for a delivery later, a model's error is
// classified by llm.Classify, anything else is retried with backoff.
type Func[In, Out any] func(ctx context.Context, cmd *messages.StageCommand, in In) (Output[Out], error)

// KeyFunc is a stage's contribution to its cache key beyond its input: for
// example a keyed hash of per-job secret values, which must change the key
// without being part of it. It runs on the worker before the cache lookup;
// its error goes through the failure policy like a handler's.
type KeyFunc func(ctx context.Context, cmd *messages.StageCommand) ([]byte, error)

// Option configures one registration.
type Option func(*route)

// DependsOn names something besides the stage's own code that shapes its
// output, with its version (a prompt set, a reply schema, the sandbox
// backend): it is part of the stage's version, so a change invalidates
// the cached results. See Mux.Version.
func DependsOn(name, version string) Option {
	return func(r *route) { r.deps = append(r.deps, dependency{name, version}) }
}

// KeyPart adds f's bytes to the stage's cache key (KeyFunc).
func KeyPart(f KeyFunc) Option { return func(r *route) { r.keyPart = f } }

type dependency struct{ name, version string }

// route is one registration with its types erased.
type route struct {
	row     messages.StageRow
	deps    []dependency
	keyPart KeyFunc
	version string
	serve   func(ctx context.Context, cmd *messages.StageCommand) (Output[json.RawMessage], bool, error)
}

// Mux routes stage commands to their typed handlers, by the stages of one
// stage table. It is built at start-up (Register) and only read
// afterwards, so it is safe for concurrent use. The executor of a pool
// serves only that pool's stages from it (admit.go).
type Mux struct {
	stages messages.StageTable
	routes map[messages.Stage]*route
	errs   []error
}

// NewMux returns an empty mux for the stages of stages.
func NewMux(stages messages.StageTable) *Mux {
	return &Mux{stages: stages, routes: map[messages.Stage]*route{}}
}

// Register makes fn the handler of stage on m. A stage that is not in m's
// table, or is registered twice, is a wiring mistake: NewExecutor reports
// it (Mux.Err).
func Register[In, Out any](m *Mux, stage messages.Stage, fn Func[In, Out], opts ...Option) {
	row, ok := m.stages.Row(stage)
	switch {
	case !ok:
		m.errs = append(m.errs, fmt.Errorf("stagework: register %q: not in the stage table", stage))
		return
	case m.routes[stage] != nil:
		m.errs = append(m.errs, fmt.Errorf("stagework: %s is registered twice", stage))
		return
	}
	r := &route{row: row}
	for _, o := range opts {
		o(r)
	}
	r.version = versionOf(row, r.deps)
	r.serve = func(ctx context.Context, cmd *messages.StageCommand) (Output[json.RawMessage], bool, error) {
		var in In
		if err := decodeInput(cmd, &in); err != nil {
			return Output[json.RawMessage]{}, false, err
		}
		out, err := fn(ctx, cmd, in)
		enc := Output[json.RawMessage]{Usage: out.Usage, Messages: out.Messages, Notes: out.Notes}
		if err != nil {
			return enc, false, err
		}
		enc.Value, err = encodeOutput(out.Value)
		return enc, hermetic(out.Value), err
	}
	m.routes[stage] = r
}

// Err is every registration mistake, nil when there is none.
func (m *Mux) Err() error { return errors.Join(m.errs...) }

// Stages is the table m routes by.
func (m *Mux) Stages() messages.StageTable { return m.stages }

// Registered lists the stages with a handler, in the table's order.
func (m *Mux) Registered() []messages.Stage {
	var out []messages.Stage
	for _, s := range m.stages.Stages() {
		if m.routes[s] != nil {
			out = append(out, s)
		}
	}
	return out
}

// Version is the version of a registered stage as its cache key holds it,
// "" for a stage with no handler. It is the one versioning scheme of every
// stage: the stage's name and its row's Version, then each dependency
// (DependsOn) as name@version, sorted by name:
//
//	plan/v1 docs@1-24576-1500 prompts@4 pyscan@1 schema@plan-a77e8181fddd
func (m *Mux) Version(stage messages.Stage) string {
	if r := m.routes[stage]; r != nil {
		return r.version
	}
	return ""
}

func versionOf(row messages.StageRow, deps []dependency) string {
	deps = slices.SortedFunc(slices.Values(deps), func(a, b dependency) int { return cmp.Compare(a.name, b.name) })
	var b strings.Builder
	fmt.Fprintf(&b, "%s/v%d", row.Stage, row.Version)
	for _, d := range deps {
		fmt.Fprintf(&b, " %s@%s", d.name, d.version)
	}
	return b.String()
}

// Serve runs the handler of cmd's stage: it decodes the input, runs the
// handler and encodes its output. storable is false for an output that
// does not follow from the command alone (Hermetic). A stage with no
// handler, and input that does not decode, fail permanently. The executor
// calls it for every command it runs; tests call it to try a handler
// without a bus.
func (m *Mux) Serve(ctx context.Context, cmd *messages.StageCommand) (out Output[json.RawMessage], storable bool, err error) {
	r := m.routes[cmd.Stage]
	if r == nil {
		return out, false, bus.Permanent(fmt.Errorf("this worker has no handler for stage %q", cmd.Stage))
	}
	return r.serve(ctx, cmd)
}

// Hermetic is implemented by stage outputs that can say whether they follow
// from the command alone. One that does not (a run that timed out or was
// killed, which says as much about the machine's load that moment as about
// the code) is published but never cached, so the next identical command
// runs again. Failed stages (errors) are never cached either.
type Hermetic interface {
	Hermetic() bool
}

func hermetic(v any) bool {
	h, ok := v.(Hermetic)
	return !ok || h.Hermetic()
}

// decodeInput reads a command's input into in. Unknown fields are allowed:
// a newer coordinator of the same wire version may add optional ones.
// Input that is missing or does not decode can never succeed: permanent.
func decodeInput(cmd *messages.StageCommand, in any) error {
	raw := bytes.TrimSpace(cmd.Input)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return bus.Permanent(fmt.Errorf("%s command has no input", cmd.Stage))
	}
	if err := json.Unmarshal(raw, in); err != nil {
		return bus.Permanent(fmt.Errorf("decode %s input: %w", cmd.Stage, err))
	}
	return nil
}

// encodeOutput is the result's output: one that does not encode as JSON
// is the handler's bug, and doing it again gives the same.
func encodeOutput(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, bus.Permanent(fmt.Errorf("marshal output: %w", err))
	}
	return b, nil
}
