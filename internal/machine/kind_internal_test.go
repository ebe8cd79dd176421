package machine

import (
	"strings"
	"testing"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Every stage has a row in the result table of some built-in kind: a
// stage without one could never be answered.
func TestEveryStageHasAResultRow(t *testing.T) {
	t.Parallel()
	rows := map[messages.Stage][]string{}
	for _, k := range Default().kinds {
		for st := range k.results {
			rows[st] = append(rows[st], k.Name)
		}
	}
	for _, st := range messages.DefaultStages().Stages() {
		if len(rows[st]) == 0 {
			t.Errorf("stage %s is in no kind's result table", st)
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
