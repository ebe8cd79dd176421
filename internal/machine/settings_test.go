package machine

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/pkg/messages"
)

// TestSandboxRetries: with options.sandbox_retries, a sandbox stage that
// fails in the sandbox (ErrorInfra) is sent again with the same input, as
// many times as the option says; then the job errors as before. A
// permanent failure, and a job without the option, are not retried.
func TestSandboxRetries(t *testing.T) {
	t.Parallel()
	infra := func(d *messages.StageCommand) *messages.StageResult {
		return &messages.StageResult{V: 1, JobID: d.JobID, Seq: d.Seq, Stage: d.Stage, Error: "container could not start", ErrorKind: messages.ErrorInfra}
	}
	tests := []struct {
		name      string
		retries   int
		kind      messages.ErrorKind
		wantRuns  int
		wantState messages.JobStatus
	}{
		{"two retries", 2, messages.ErrorInfra, 3, messages.StatusErrored},
		{"no option", 0, messages.ErrorInfra, 1, messages.StatusErrored},
		{"permanent", 2, messages.ErrorPermanent, 1, messages.StatusFailed},
	}
	for _, tt := range tests {
		sub := runSubmission()
		sub.Spec.Options.SandboxRetries = tt.retries
		sub.Spec.Normalize("")
		s, cmds := Step(State{}, Input{Kind: InputSubmitted, Time: t0, Submit: &sub})
		if b, _ := json.Marshal(s); bytes.Contains(b, []byte(`"input"`)) != (tt.retries > 0) {
			t.Errorf("%s: the pending run keeps its input: %v, want %v", tt.name, !(tt.retries > 0), tt.retries > 0)
		}
		var runs []*messages.StageCommand
		for i := 0; len(cmds) > 0 && i < 10; i++ {
			d := dispatched(cmds, messages.StageRun)
			if len(d) != 1 {
				break
			}
			runs = append(runs, d[0])
			r := infra(d[0])
			r.ErrorKind = tt.kind
			s, cmds = Step(s, Input{Kind: InputStageResult, Time: t0.Add(time.Duration(i+1) * time.Second), Result: r})
		}
		if len(runs) != tt.wantRuns || s.Status != tt.wantState {
			t.Errorf("%s: %d runs, status %s; want %d, %s", tt.name, len(runs), s.Status, tt.wantRuns, tt.wantState)
			continue
		}
		for _, r := range runs[1:] {
			if !bytes.Equal(r.Input, runs[0].Input) || r.Seq == runs[0].Seq {
				t.Errorf("%s: a retry is not the same input under a new seq", tt.name)
			}
		}
		if tt.wantRuns > 1 && !strings.Contains(strings.Join(s.Notes, "\n"), "retry 2 of 2 (options.sandbox_retries)") {
			t.Errorf("%s: notes %q", tt.name, s.Notes)
		}
	}
}
