package machine

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/autocoder/autocoder/pkg/messages"
)

// maxNoteTests bounds how many tests a stage_finished note names.
const maxNoteTests = 5

// stageNote is the Message of a stage_finished event: what a progress view
// shows under the stage's line. A test run names its failing tests; a
// diagnosis names each failing test with its error type and root cause.
// Other stages have none.
func stageNote(r *messages.StageResult) string {
	if r.Error != "" {
		return ""
	}
	switch r.Stage {
	case messages.StageRunTests:
		return failingNote(r.Output)
	case messages.StageDiagnose:
		return diagnosisNote(r.Output)
	}
	return ""
}

// failingNote names a test run's failing tests.
func failingNote(output []byte) string {
	var rep messages.TestReport
	if json.Unmarshal(output, &rep) != nil {
		return ""
	}
	var failing []string
	for _, c := range rep.Cases {
		if c.Outcome == messages.OutcomeFailed || c.Outcome == messages.OutcomeError {
			failing = append(failing, c.Name)
		}
	}
	return listNote("failing: ", failing)
}

// diagnosisNote names each diagnosed failure with its error type and root
// cause, and the packages the diagnosis asks for.
func diagnosisNote(output []byte) string {
	var d messages.Diagnosis
	if json.Unmarshal(output, &d) != nil {
		return ""
	}
	var parts []string
	for _, f := range d.Failures {
		p := fmt.Sprintf("%s (%s)", f.TestName, f.ErrorType)
		if f.RootCause != "" {
			p += ": " + firstLine(f.RootCause)
		}
		parts = append(parts, p)
	}
	if len(d.NeedsPackages) > 0 {
		parts = append(parts, "needs packages "+strings.Join(d.NeedsPackages, ", "))
	}
	return listNote("diagnosis: ", parts)
}

func listNote(prefix string, items []string) string {
	if len(items) == 0 {
		return ""
	}
	more := ""
	if len(items) > maxNoteTests {
		more = fmt.Sprintf("; and %d more", len(items)-maxNoteTests)
		items = items[:maxNoteTests]
	}
	return prefix + strings.Join(items, "; ") + more
}
