package metrics

import (
	"testing"

	"github.com/autocoder/autocoder/pkg/messages"
)

// TestJobOutcome: each way a job ends has its outcome label.
func TestJobOutcome(t *testing.T) {
	t.Parallel()
	spec := &messages.JobSpec{Options: messages.Options{MaxIterations: 3}}
	stages := []messages.StageRecord{{Name: messages.StagePlan}}
	for want, r := range map[string]messages.Result{
		"passed":         {Status: messages.StatusSucceeded, Success: true, Attempts: 1, Stages: stages, Spec: spec},
		"infrastructure": {Status: messages.StatusErrored, Attempts: 1, Stages: stages, Spec: spec},
		"rejected":       {Status: messages.StatusFailed},
		"exhausted":      {Status: messages.StatusFailed, Attempts: 3, Stages: stages, Spec: spec},
		"failed":         {Status: messages.StatusFailed, Attempts: 1, Stages: stages, Spec: spec},
		"cancelled":      {Status: "cancelled", Attempts: 1, Stages: stages, Spec: spec},
	} {
		if got := jobOutcome(&r); got != want {
			t.Errorf("jobOutcome(%+v) = %q, want %q", r, got, want)
		}
	}
}
