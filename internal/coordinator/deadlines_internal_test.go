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

// TestOwnWritesAreKnownWithoutReading: a record this coordinator noted
// before writing it gives the watch its deadline when the same bytes come
// back, once; other bytes for the job are read as usual, and a write the
// watch never sees is dropped after ownWriteTTL. With no watch running,
// nothing is noted.
func TestOwnWritesAreKnownWithoutReading(t *testing.T) {
	c := &Coordinator{cfg: Config{Stages: messages.DefaultStages()}}
	var s machine.State
	s.Phase = "running"
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	s.Pending = map[int]machine.Pending{1: {Stage: messages.StageCode, DispatchedAt: at}}
	want, _ := c.nextDeadline(&s)
	c.noteWrite("j", []byte(`{"a":1}`), &s)
	if _, _, mine := c.written.take("j", []byte(`{"a":1}`)); mine {
		t.Error("a write was noted with no deadline watch running to take it")
	}
	c.written.follow(true)
	c.noteWrite("j", []byte(`{"a":1}`), &s)
	if _, _, mine := c.written.take("j", []byte(`{"a":2}`)); mine {
		t.Error("another record for the job was taken for the one noted")
	}
	if next, ok, mine := c.written.take("j", []byte(`{"a":1}`)); !mine || !ok || !next.Equal(want) {
		t.Errorf("take = %v %v %v, want %v true true", next, ok, mine, want)
	}
	if _, _, mine := c.written.take("j", []byte(`{"a":1}`)); mine {
		t.Error("a noted write was taken twice")
	}
	c.noteWrite("k", []byte(`{}`), &s)
	c.written.expire(time.Now().Add(ownWriteTTL + time.Second))
	if _, _, mine := c.written.take("k", []byte(`{}`)); mine {
		t.Error("a write the watch never saw was kept past ownWriteTTL")
	}
}
