package stagework

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/pkg/messages"
)

// coordinatorRecord is the coordinator's record as it stores it
// (internal/coordinator's record type).
type coordinatorRecord struct {
	State      machine.State        `json:"state"`
	Outbox     []machine.Command    `json:"outbox,omitempty"`
	Iterations []messages.Iteration `json:"iterations,omitempty"`
}

// bigRecord is a record as the sandbox stages find it: code, tests and a
// long conversation after the pending stages.
func bigRecord(pending map[int]machine.Pending, phase machine.Phase) coordinatorRecord {
	long := strings.Repeat("x = 1  # a line of the solution\n", 2000)
	st := machine.State{
		Job: machine.Job{JobID: "job-1", Phase: phase, NextSeq: 9, Pending: pending,
			Spec: messages.JobSpec{Prompt: "Compute 42.", Outputs: map[string]messages.Type{"answer": messages.TypeInt}}},
		Artifacts: machine.Artifacts{Solution: &messages.Solution{Language: "python", Code: long}, Tests: &messages.Tests{Code: long}}}
	return coordinatorRecord{State: st, Iterations: []messages.Iteration{{Iteration: 1, Code: long, Tests: long}}}
}

// TestDecodeJobRecord: admission's decoding, which stops once it has the
// phase and the pending stages, reads what decoding the whole record
// reads, for records laid out as the coordinator writes them and others.
func TestDecodeJobRecord(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	pending := map[int]machine.Pending{7: {Stage: messages.StageRunTests, DispatchedAt: now}, 8: {Stage: messages.StageAcceptance, DispatchedAt: now}}
	records := map[string][]byte{}
	for name, rec := range map[string]coordinatorRecord{
		"pending":            bigRecord(pending, machine.PhaseTesting),
		"nothing pending":    bigRecord(nil, machine.PhaseDone),
		"finished, pending?": bigRecord(pending, machine.PhaseDone),
	} {
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		records[name] = b
	}
	records["state not first"] = []byte(`{"outbox":[],"state":{"phase":"testing","pending":{"3":{"stage":"run_tests"}}}}`)
	records["pending first"] = []byte(`{"state":{"pending":{"3":{"stage":"run_tests"}},"job_id":"j","phase":"testing"}}`)
	for name, b := range records {
		var want jobRecord
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		got, err := decodeJobRecord(b)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: decodeJobRecord differs from decoding the whole record (-whole +early):\n%s", name, diff)
		}
	}
	for _, bad := range []string{``, `{`, `{"state":`, `{"state":{"phase":`, `[1]`, `{"state":{"phase":"testing","pending":{"x":1}}}`} {
		if _, err := decodeJobRecord([]byte(bad)); err == nil {
			t.Errorf("decodeJobRecord(%q): no error", bad)
		}
	}
}

// BenchmarkDecodeJobRecord compares admission's decoding of a record as
// the sandbox stages find it with decoding the whole record.
func BenchmarkDecodeJobRecord(b *testing.B) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	rec, err := json.Marshal(bigRecord(map[int]machine.Pending{7: {Stage: messages.StageRunTests, DispatchedAt: now}}, machine.PhaseTesting))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			var r jobRecord
			if err := json.Unmarshal(rec, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("early", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeJobRecord(rec); err != nil {
				b.Fatal(err)
			}
		}
	})
}
