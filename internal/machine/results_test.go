package machine

import (
	"strings"
	"testing"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Every stage the machine dispatches has a row in the results table: a
// stage without one would leave its job waiting forever.
func TestEveryStageHasAResultHandler(t *testing.T) {
	t.Parallel()
	for _, st := range []messages.Stage{
		messages.StagePlan, messages.StageCode, messages.StageTests, messages.StagePackages,
		messages.StageDiagnose, messages.StageFix, messages.StagePatchTests, messages.StageVerify,
		messages.StageConstraint, messages.StagePackageReplacement, messages.StageProfile,
		messages.StageBuild, messages.StageRunTests, messages.StageAcceptance, messages.StageRun,
	} {
		if results[st] == nil {
			t.Errorf("stage %s has no result handler", st)
		}
	}
}

func TestDecode(t *testing.T) {
	t.Parallel()
	out, err := decode[messages.Plan](&messages.StageResult{Stage: messages.StagePlan, Output: []byte(`{"description":"d","approach":"a"}`)})
	if err != nil || out.Description != "d" || out.Approach != "a" {
		t.Errorf("decode = %+v, %v", out, err)
	}
	if _, err := decode[messages.Plan](&messages.StageResult{Stage: messages.StagePlan, Output: []byte(`[1]`)}); err == nil ||
		!strings.HasPrefix(err.Error(), "stage plan returned malformed output:") {
		t.Errorf("decode of a malformed output: %v", err)
	}
}
