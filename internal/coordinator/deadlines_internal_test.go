package coordinator

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestDeadlineFieldsReadTheSameDeadline: the deadline watch reads a
// record's options, phase and pending stages only, and finds the deadline
// the whole record gives; a record laid out otherwise is read whole.
func TestDeadlineFieldsReadTheSameDeadline(t *testing.T) {
	c := &Coordinator{cfg: Config{Stages: messages.DefaultStages()}}
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	var running machine.State
	running.JobID, running.Phase = "j", "running"
	running.Spec = messages.JobSpec{Prompt: "p", Options: messages.Options{Timeout: messages.Duration(7 * time.Minute)}}
	running.Pending = map[int]machine.Pending{
		4: {Stage: messages.StageRunTests, DispatchedAt: at},
		5: {Stage: messages.StageCode, DispatchedAt: at.Add(time.Hour)}, // run_tests is due first, by options.timeout
	}
	done := running
	done.Phase, done.Pending = machine.PhaseDone, nil
	for _, s := range []machine.State{running, done} {
		b, err := json.Marshal(record{State: s, Outbox: []machine.Command{{Emit: &messages.Event{Type: messages.EventStageQueued}}}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := deadlineFields(b)
		if err != nil {
			t.Fatal(err)
		}
		wantAt, wantOK := c.nextDeadline(&s)
		gotAt, gotOK := c.nextDeadline(got)
		if gotAt != wantAt || gotOK != wantOK {
			t.Errorf("phase %s: next deadline %v %v, want %v %v", s.Phase, gotAt, gotOK, wantAt, wantOK)
		}
	}
	if _, err := deadlineFields([]byte(`{"state":`)); err == nil {
		t.Error("a broken record read without an error")
	}
}
