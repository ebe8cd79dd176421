package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/bus/bustest"
	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/pkg/messages"
)

// BenchmarkHopParts times each part of the coordinator's side of a stage
// hop, on an embedded NATS server with file storage (as deployed): the
// code result of a job whose code and tests are pending, turned into the
// next stage's command. Each part runs on its own, b.N times:
//
//	decode      the result message's JSON
//	load        the job's record from the state bucket (a read and a decode): what a kept copy saves
//	load-kept   the kept copy (statecache.go)
//	step        machine.Step (with its State.Clone)
//	encode      the new record's JSON
//	cas-write   the compare-and-set write of the record
//	publish     the step's commands: the stage command, then its events as one batch
//	clear       the write that clears the outbox once the commands are out
//	js-publish  the unit: one acked JetStream publish of 1 KiB
//
//	go test -run '^$' -bench HopParts -benchtime 200x ./internal/coordinator
func BenchmarkHopParts(b *testing.B) {
	env := bustest.Start(b, bus.ProvisionConfig{})
	pub := bus.NewPublisher(env.JS, bus.PublisherConfig{})
	c, err := New(Config{States: env.Resources.JobState, Results: env.Resources.JobResults, Publisher: pub})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rec, result := hopFixture(b)
	raw, err := json.Marshal(result)
	if err != nil {
		b.Fatal(err)
	}
	in := machine.Input{Kind: machine.InputStageResult, Time: time.Now(), Result: result}
	jobID := rec.State.JobID
	body, _ := json.Marshal(rec)
	rev, err := c.cfg.States.Create(ctx, bus.JobKey(jobID), body)
	if err != nil {
		b.Fatal(err)
	}
	c.states.put(jobID, rec, rev, len(body))
	next, cmds := c.cfg.Machine.Step(rec.State, in)
	if len(cmds) == 0 {
		b.Fatal("the fixture's result changes nothing")
	}
	stored := record{State: next, Outbox: cmds}

	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			var r messages.StageResult
			if err := json.Unmarshal(raw, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("load", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := c.load(ctx, jobID, machine.InputStageResult); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("load-kept", func(b *testing.B) {
		for b.Loop() {
			if _, _, ok := c.states.get(jobID); !ok {
				b.Fatal("not kept")
			}
		}
	})
	b.Run("step", func(b *testing.B) {
		for b.Loop() {
			c.cfg.Machine.Step(rec.State, in)
		}
	})
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(stored); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cas-write", func(b *testing.B) {
		for b.Loop() {
			if rev, err = c.cfg.States.Update(ctx, bus.JobKey(jobID), body, rev); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("publish", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			if err := c.publish(ctx, renamed(cmds, fmt.Sprintf("%s-%d", jobID, i))); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("clear", func(b *testing.B) {
		for b.Loop() {
			c.clearOutbox(ctx, jobID, stored, rev)
			_, rev, _ = c.states.get(jobID)
		}
	})
	b.Run("js-publish", func(b *testing.B) {
		payload := make([]byte, 1024)
		for b.Loop() {
			if _, err := env.JS.Publish(ctx, bus.EventSubject(jobID), payload); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// hopFixture is a job's record with its code and tests pending (planned
// first) and the code's result.
func hopFixture(b *testing.B) (record, *messages.StageResult) {
	b.Helper()
	spec := messages.JobSpec{Prompt: "Compute 42 and write it as the output answer.", Outputs: map[string]messages.Type{"answer": messages.TypeInt},
		Options: messages.Options{FirstPass: messages.FirstPassPlanFirst}}
	spec.Normalize("")
	now := time.Now()
	s, cmds := machine.Step(machine.State{}, machine.Input{Kind: machine.InputSubmitted, Time: now,
		Submit: &machine.Submission{JobID: "job-hop", Spec: spec}})
	answer := func(cmd *messages.StageCommand, v any) *messages.StageResult {
		out, _ := json.Marshal(v)
		return &messages.StageResult{V: messages.WireVersion, JobID: cmd.JobID, Seq: cmd.Seq, Stage: cmd.Stage, Output: out,
			StartedAt: now, DurationMS: 1, Usage: messages.Usage{InputTokens: 900, OutputTokens: 300, Calls: 1},
			Messages: []messages.ChatMessage{{Role: "system", Content: "You write Python."}, {Role: "user", Content: spec.Prompt}}}
	}
	plan := cmds[0].Dispatch
	for _, cmd := range cmds {
		if cmd.Dispatch != nil {
			plan = cmd.Dispatch
		}
	}
	s, cmds = machine.Step(s, machine.Input{Kind: machine.InputStageResult, Time: now,
		Result: answer(plan, messages.Plan{Description: "return 42", Approach: "answer() -> int; main writes it"})})
	for _, cmd := range cmds {
		if cmd.Dispatch != nil && cmd.Dispatch.Stage == messages.StageCode {
			code := "def answer():\n    return 42\n\n\ndef main(argv=None, out_dir='/var/outputs'):\n    return 0\n"
			return record{State: s}, answer(cmd.Dispatch, messages.Solution{Language: "python", Code: code, Packages: []string{}, SystemPackages: []string{}})
		}
	}
	b.Fatal("the fixture dispatched no code")
	return record{}, nil
}

// renamed is cmds for another job (fresh de-duplication IDs).
func renamed(cmds []machine.Command, jobID string) []machine.Command {
	out := make([]machine.Command, len(cmds))
	for i, cmd := range cmds {
		switch {
		case cmd.Dispatch != nil:
			d := *cmd.Dispatch
			d.JobID = jobID
			cmd.Dispatch = &d
		case cmd.Emit != nil:
			e := *cmd.Emit
			e.JobID = jobID
			cmd.Emit = &e
		}
		out[i] = cmd
	}
	return out
}
