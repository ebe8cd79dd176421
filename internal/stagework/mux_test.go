package stagework_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

// echoRow is a stage that exists only in these tests.
var echoRow = messages.StageRow{Stage: "echo", Pool: messages.PoolSandbox, Deadline: messages.DeadlineStep, Cached: true, Version: 3}

type echoIn struct {
	Text string `json:"text"`
}

type echoOut struct {
	Echo string `json:"echo"`
}

func echo(_ context.Context, _ *messages.StageCommand, in echoIn) (stagework.Output[echoOut], error) {
	return stagework.Output[echoOut]{Value: echoOut{Echo: in.Text}}, nil
}

func echoTable(t *testing.T, rows ...messages.StageRow) messages.StageTable {
	t.Helper()
	if len(rows) == 0 {
		rows = []messages.StageRow{echoRow}
	}
	st, err := messages.DefaultStages().With(rows...)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func echoCommand(t *testing.T, input string) *messages.StageCommand {
	t.Helper()
	return &messages.StageCommand{V: messages.WireVersion, JobID: "job-1", Seq: 4, Stage: "echo", Input: json.RawMessage(input)}
}

// TestRegisterTyped: a registered handler gets its input decoded into its
// own type and its output encoded; input that does not decode, or a stage
// with no handler, fail permanently before any handler runs.
func TestRegisterTyped(t *testing.T) {
	t.Parallel()
	mux := stagework.NewMux(echoTable(t))
	stagework.Register(mux, "echo", echo)
	if err := mux.Err(); err != nil {
		t.Fatal(err)
	}
	out, storable, err := mux.Serve(context.Background(), echoCommand(t, `{"text":"hi","later_field":1}`))
	if err != nil || string(out.Value) != `{"echo":"hi"}` || !storable {
		t.Errorf("Serve = %s, %v, %v", out.Value, storable, err)
	}
	for name, input := range map[string]string{"missing": ``, "null": `null`, "wrong type": `{"text":1}`, "truncated": `{"te`} {
		if _, _, err := mux.Serve(context.Background(), echoCommand(t, input)); !bus.IsPermanent(err) {
			t.Errorf("%s input: err = %v, want permanent", name, err)
		}
	}
	cmd := echoCommand(t, `{}`)
	cmd.Stage = messages.StagePlan
	if _, _, err := mux.Serve(context.Background(), cmd); !bus.IsPermanent(err) || !strings.Contains(err.Error(), "plan") {
		t.Errorf("no handler: err = %v, want permanent, naming the stage", err)
	}
}

// TestRegisterMistakes: a stage not in the table, or registered twice,
// is reported by Err and refused by NewExecutor.
func TestRegisterMistakes(t *testing.T) {
	t.Parallel()
	mux := stagework.NewMux(messages.DefaultStages())
	stagework.Register(mux, "echo", echo) // not in the default table
	stagework.Register(mux, messages.StagePlan, func(context.Context, *messages.StageCommand, messages.PlanInput) (stagework.Output[messages.Plan], error) {
		return stagework.Output[messages.Plan]{}, nil
	})
	stagework.Register(mux, messages.StagePlan, func(context.Context, *messages.StageCommand, json.RawMessage) (stagework.Output[any], error) {
		return stagework.Output[any]{}, nil
	})
	err := mux.Err()
	if err == nil || !strings.Contains(err.Error(), `"echo": not in the stage table`) || !strings.Contains(err.Error(), "plan is registered twice") {
		t.Errorf("Err() = %v", err)
	}
	if _, err := stagework.NewExecutor(stagework.Config{Mux: mux, Pool: messages.PoolLLM, Publisher: &publisher{}, Jobs: pendingAs{}}); err == nil {
		t.Error("NewExecutor took a mux with registration mistakes")
	}
	if got := mux.Registered(); len(got) != 1 || got[0] != messages.StagePlan {
		t.Errorf("Registered() = %v", got)
	}
}

// TestVersionScheme: every stage's version is its name, its row's version
// and its dependencies by name; a changed dependency changes it.
func TestVersionScheme(t *testing.T) {
	t.Parallel()
	mux := stagework.NewMux(echoTable(t))
	stagework.Register(mux, "echo", echo, stagework.DependsOn("prompts", "7"), stagework.DependsOn("backend", "fake"))
	if v := mux.Version("echo"); v != "echo/v3 backend@fake prompts@7" {
		t.Errorf("Version = %q", v)
	}
	if v := mux.Version(messages.StagePlan); v != "" {
		t.Errorf("an unregistered stage has version %q", v)
	}
}

// TestKeyPart: a stage's key hook adds to its cache key (per-job secrets
// key the cache by a keyed hash computed on the worker); its failure goes
// through the policy like a handler's.
func TestKeyPart(t *testing.T) {
	t.Parallel()
	var secret atomic.Value
	secret.Store("one")
	keyed := func(t *testing.T, fail error) *stagework.Executor {
		mux := stagework.NewMux(echoTable(t))
		stagework.Register(mux, "echo", echo, stagework.KeyPart(func(_ context.Context, cmd *messages.StageCommand) ([]byte, error) {
			if fail != nil {
				return nil, fail
			}
			return []byte(cmd.JobID + "/" + secret.Load().(string)), nil
		}))
		x, err := stagework.NewExecutor(stagework.Config{Mux: mux, Pool: messages.PoolSandbox, Publisher: &publisher{}, Jobs: pendingAs{"echo"}})
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	x := keyed(t, nil)
	cmd := echoCommand(t, `{"text":"hi"}`)
	first := mustKey(t, x, cmd)
	secret.Store("two")
	if mustKey(t, x, cmd) == first {
		t.Error("the key hook's bytes are not in the key")
	}
	if _, err := keyed(t, errors.New("vault down")).Key(ctxT(t), cmd); err == nil {
		t.Error("a failing key hook gave a key")
	}
}

// TestKeyPartFailureIsAResult: a key hook that cannot compute the key
// fails the stage by the policy: permanent here, published as a result.
func TestKeyPartFailureIsAResult(t *testing.T) {
	t.Parallel()
	mux := stagework.NewMux(echoTable(t))
	stagework.Register(mux, "echo", echo, stagework.KeyPart(func(context.Context, *messages.StageCommand) ([]byte, error) {
		return nil, bus.Permanent(errors.New("the job's secret is not there"))
	}))
	p := &publisher{}
	x, err := stagework.NewExecutor(stagework.Config{Mux: mux, Pool: messages.PoolSandbox, Publisher: p, Jobs: pendingAs{"echo"}, Cache: newMemCache()})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Handle(ctxT(t), message(t, echoCommand(t, `{"text":"hi"}`), 1)); err != nil {
		t.Fatal(err)
	}
	res := p.results()
	if len(res) != 1 || res[0].Result.ErrorKind != messages.ErrorPermanent || res[0].Result.Error != "the job's secret is not there" {
		t.Errorf("published %+v", res)
	}
}

// TestUncachedRow: a stage whose row says Cached false is neither read
// from nor written to the cache, even in cache mode auto.
func TestUncachedRow(t *testing.T) {
	t.Parallel()
	row := echoRow
	row.Cached = false
	var calls atomic.Int32
	mux := stagework.NewMux(echoTable(t, row))
	stagework.Register(mux, "echo", func(ctx context.Context, cmd *messages.StageCommand, in echoIn) (stagework.Output[echoOut], error) {
		calls.Add(1)
		return echo(ctx, cmd, in)
	})
	c := newMemCache()
	x, err := stagework.NewExecutor(stagework.Config{Mux: mux, Pool: messages.PoolSandbox, Publisher: &publisher{}, Jobs: pendingAs{"echo"}, Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := x.Handle(ctxT(t), message(t, echoCommand(t, `{"text":"hi"}`), 1)); err != nil {
			t.Fatal(err)
		}
	}
	if gets, sets := c.stats(); calls.Load() != 2 || gets != 0 || sets != 0 {
		t.Errorf("calls %d, cache gets %d sets %d: want 2 calls and no cache use", calls.Load(), gets, sets)
	}
}

// TestModelErrorsAreClassified: a handler returns the model's error as it
// is; the policy classifies it with llm.Classify, in one place for every
// stage: a refusal or an invalid reply fails the stage, a wait asked for
// is kept (llm.Classify's RetryAfter, or bus.RetryAfter), anything else
// is retried with the backoff.
func TestModelErrorsAreClassified(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		err       error
		permanent bool
		delay     string
	}{
		{"refused request", &llm.CallError{StatusCode: 401, Attempts: 1}, true, ""},
		{"invalid reply", fmt.Errorf("plan: %w: not json", llm.ErrInvalidReply), true, ""},
		{"a wait the handler asked for", bus.RetryAfter(errors.New("busy"), 90*time.Second), false, "1m30s"},
		{"endpoint down", errors.New("connection refused"), false, "7s"},
	}
	for _, tc := range tests {
		h := &handler{version: "v1", fn: func(context.Context, *messages.StageCommand) (stagework.Output[any], error) {
			return stagework.Output[any]{Usage: messages.Usage{Calls: 1}}, tc.err
		}}
		p := &publisher{}
		x := newExecutor(t, h, p, nil, func(c *stagework.Config) { c.RetryDelay = func(uint64) time.Duration { return 7e9 } })
		err := x.Handle(ctxT(t), message(t, command(messages.CacheAuto), 1))
		if tc.permanent {
			res := p.results()
			if err != nil || len(res) != 1 || res[0].Result.ErrorKind != messages.ErrorPermanent || res[0].Result.Usage.Calls != 1 {
				t.Errorf("%s: Handle = %v, published %+v; want a permanent failure with its usage", tc.name, err, res)
			}
			continue
		}
		d, asked := bus.RetryDelayOf(err)
		if !asked || d.String() != tc.delay || len(p.results()) != 0 {
			t.Errorf("%s: Handle = %v (delay %s); want a retry after %s and nothing published", tc.name, err, d, tc.delay)
		}
	}
}
