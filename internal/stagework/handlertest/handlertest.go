package handlertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Config says what the handlers under test serve.
type Config struct {
	// Stages are the stages the handlers register on the mux. Required.
	Stages []messages.Stage
	// Inputs holds, for served stages, an input (a messages.*Input value or
	// raw JSON) that the handlers made by newMux complete: with it the
	// suite checks that outputs encode, that a cancelled context returns
	// promptly, and concurrent use. Stages without one get only the checks
	// that need no valid input.
	Inputs map[messages.Stage]any
	// Promptly bounds how long the handler may take to return once its
	// context is cancelled, and how long any check waits for it. Default
	// DefaultPromptly.
	Promptly time.Duration
}

// DefaultPromptly is Config.Promptly's default.
const DefaultPromptly = 5 * time.Second

// unknownStage is a stage no handler serves.
const unknownStage messages.Stage = "handlertest_no_such_stage"

// malformedInputs are inputs no stage can decode.
var malformedInputs = map[string]json.RawMessage{
	"truncated JSON": json.RawMessage(`{"`),
	"an array":       json.RawMessage(`[1, 2]`),
	"a string":       json.RawMessage(`"input"`),
	"empty":          nil,
}

// Run runs the suite on the handlers newMux registers (a mux per check).
func Run(t *testing.T, newMux func(t *testing.T) *stagework.Mux, cfg Config) {
	t.Helper()
	if len(cfg.Stages) == 0 {
		t.Fatal("handlertest: Config.Stages is empty")
	}
	if cfg.Promptly <= 0 {
		cfg.Promptly = DefaultPromptly
	}
	for name, check := range checks(cfg) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			mux := newMux(t)
			if err := mux.Err(); err != nil {
				t.Fatalf("registration: %v", err)
			}
			if err := check(mux); err != nil {
				t.Error(err)
			}
		})
	}
}

// checks are the suite's checks by name; each returns what is wrong.
func checks(cfg Config) map[string]func(*stagework.Mux) error {
	p := cfg.Promptly
	out := map[string]func(*stagework.Mux) error{
		"unknown stage is permanent": func(h *stagework.Mux) error {
			return checkPermanent(h, command(unknownStage, json.RawMessage(`{}`)), p)
		},
	}
	for _, stage := range cfg.Stages {
		out[fmt.Sprintf("%s/version", stage)] = func(h *stagework.Mux) error { return checkVersion(h, stage) }
		for name, raw := range malformedInputs {
			out[fmt.Sprintf("%s/%s input is permanent", stage, name)] = func(h *stagework.Mux) error {
				return checkPermanent(h, command(stage, raw), p)
			}
		}
		in, ok := cfg.Inputs[stage]
		if !ok {
			continue
		}
		out[fmt.Sprintf("%s/output encodes", stage)] = func(h *stagework.Mux) error { return checkOutput(h, stage, in, p) }
		out[fmt.Sprintf("%s/cancelled context", stage)] = func(h *stagework.Mux) error { return checkCancelled(h, stage, in, p) }
		out[fmt.Sprintf("%s/concurrent use", stage)] = func(h *stagework.Mux) error { return checkConcurrent(h, stage, in, p) }
	}
	return out
}

func command(stage messages.Stage, input json.RawMessage) *messages.StageCommand {
	return &messages.StageCommand{V: messages.WireVersion, JobID: "handlertest-job", Seq: 1, Stage: stage,
		Model: "handlertest-model", Cache: messages.CacheDisable, Input: input}
}

func validCommand(stage messages.Stage, in any) (*messages.StageCommand, error) {
	raw, ok := in.(json.RawMessage)
	if !ok {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("handlertest: the %s input does not encode: %w", stage, err)
		}
		raw = b
	}
	return command(stage, raw), nil
}

// checkVersion: a served stage is registered, and so has a version (it is
// part of the cache key).
func checkVersion(h *stagework.Mux, stage messages.Stage) error {
	if h.Version(stage) == "" {
		return fmt.Errorf("%s is not registered on the mux: it has no version", stage)
	}
	return nil
}

// checkPermanent: cmd cannot succeed, so the handler fails it permanently
// (no panic, no retry), and the executor publishes a failed result at once.
func checkPermanent(h *stagework.Mux, cmd *messages.StageCommand, promptly time.Duration) error {
	c, err := call(context.Background(), h, cmd, promptly)
	if err != nil {
		return err
	}
	if c.err == nil {
		return fmt.Errorf("%s with input %q succeeded, want a permanent error", cmd.Stage, cmd.Input)
	}
	if !bus.IsPermanent(c.err) {
		return fmt.Errorf("%s with input %q: error %q is not marked permanent (bus.Permanent): it would be retried", cmd.Stage, cmd.Input, c.err)
	}
	if len(cmd.Input) == 0 || !json.Valid(cmd.Input) || h.Stages().Pool(cmd.Stage) == "" {
		return nil // no command message can carry it to an executor, or none admits it
	}
	return executed(h, cmd, func(res *messages.StageResult) bool {
		return res.ErrorKind == messages.ErrorPermanent && res.Error != ""
	}, "a permanent failure")
}

// executed runs cmd through an executor and checks the result it
// published with ok, which wants what want says.
func executed(h *stagework.Mux, cmd *messages.StageCommand, ok func(*messages.StageResult) bool, want string) error {
	res, err := execute(context.Background(), h, cmd)
	if err != nil {
		return err
	}
	if res == nil || !ok(res) {
		return fmt.Errorf("%s with input %q: the executor published %+v, want %s", cmd.Stage, cmd.Input, res, want)
	}
	return nil
}

// checkOutput: a valid input gives an output that encodes as JSON, and the
// executor publishes it.
func checkOutput(h *stagework.Mux, stage messages.Stage, in any, promptly time.Duration) error {
	cmd, err := validCommand(stage, in)
	if err != nil {
		return err
	}
	c, err := call(context.Background(), h, cmd, promptly)
	if err != nil {
		return err
	}
	if c.err != nil {
		return fmt.Errorf("%s with a valid input failed: %w", stage, c.err)
	}
	if len(c.out.Value) == 0 || string(c.out.Value) == "null" {
		return fmt.Errorf("%s returned no output value", stage)
	}
	return executed(h, cmd, func(res *messages.StageResult) bool {
		return res.Error == "" && len(res.Output) > 0 && string(res.Output) != "null"
	}, "the output")
}

// checkCancelled: with its context cancelled the handler returns within
// Config.Promptly (a worker's shutdown waits for it), without panicking.
func checkCancelled(h *stagework.Mux, stage messages.Stage, in any, promptly time.Duration) error {
	cmd, err := validCommand(stage, in)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c, err := call(ctx, h, cmd, promptly)
	if err != nil {
		return err
	}
	_ = c // any outcome will do, if it comes promptly and without a panic
	return nil
}

// checkConcurrent: a worker runs many stages at once on one handler.
func checkConcurrent(h *stagework.Mux, stage messages.Stage, in any, promptly time.Duration) error {
	cmd, err := validCommand(stage, in)
	if err != nil {
		return err
	}
	const n = 4
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := call(context.Background(), h, cmd, promptly)
			if err == nil && c.err != nil {
				err = fmt.Errorf("%s, %d at once: %w", stage, n, c.err)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// outcome is what one Serve call gave.
type outcome struct {
	out stagework.Output[json.RawMessage]
	err error
}

// call runs h.Serve, turning a panic or a handler that does not return
// within promptly into the returned error.
func call(ctx context.Context, h *stagework.Mux, cmd *messages.StageCommand, promptly time.Duration) (outcome, error) {
	done := make(chan outcome, 1)
	panicked := make(chan any, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				panicked <- v
			}
		}()
		out, _, err := h.Serve(ctx, cmd)
		done <- outcome{out, err}
	}()
	timer := time.NewTimer(promptly)
	defer timer.Stop()
	select {
	case c := <-done:
		return c, nil
	case v := <-panicked:
		return outcome{}, fmt.Errorf("%s with input %q panicked: %v", cmd.Stage, cmd.Input, v)
	case <-timer.C:
		return outcome{}, fmt.Errorf("%s did not return within %s (context cancelled: %v)", cmd.Stage, promptly, ctx.Err() != nil)
	}
}

// execute runs cmd through a stage executor on its first delivery and
// returns the result it published (nil if none), or an error if the
// executor would hand the command back to the bus instead.
func execute(ctx context.Context, h *stagework.Mux, cmd *messages.StageCommand) (*messages.StageResult, error) {
	pub := &publisher{}
	pool := h.Stages().Pool(cmd.Stage)
	x, err := stagework.NewExecutor(stagework.Config{Mux: h, Publisher: pub, Worker: "handlertest",
		Pool: pool, Jobs: dispatched{cmd}})
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(cmd)
	if err != nil {
		return nil, fmt.Errorf("handlertest: encode command: %w", err)
	}
	msg := bus.NewMessage(bus.StageSubject(pool, cmd.Stage), b, nil, 1).WithMaxDeliver(bus.DefaultMaxDeliver)
	if err := x.Handle(ctx, msg); err != nil {
		return nil, fmt.Errorf("%s with input %q: the executor returned %v to the bus (retry or terminate), want a published result", cmd.Stage, cmd.Input, err)
	}
	return pub.result, nil
}

// dispatched is a Jobs with just cmd pending: the command the
// coordinator sent.
type dispatched struct{ cmd *messages.StageCommand }

func (d dispatched) PendingStage(_ context.Context, jobID string, seq int) (messages.Stage, stagework.JobStatus, error) {
	switch {
	case jobID != d.cmd.JobID:
		return "", stagework.JobUnknown, nil
	case seq != d.cmd.Seq:
		return "", stagework.JobRunning, nil
	}
	return d.cmd.Stage, stagework.JobRunning, nil
}

// publisher keeps the result the executor publishes.
type publisher struct {
	mu     sync.Mutex
	result *messages.StageResult
}

func (p *publisher) PublishJSON(_ context.Context, _ string, v any, _ string) error {
	r, ok := v.(*messages.StageResult)
	if !ok {
		return fmt.Errorf("handlertest: published %T, want a stage result", v)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c := *r
	p.result = &c
	return nil
}
