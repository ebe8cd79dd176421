package submit

import (
	"bytes"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/pkg/messages"
)

func TestSummaryOfACodeRunnerJob(t *testing.T) {
	t.Parallel()
	r := &messages.Result{Success: true, JobID: "job-1", Spec: &messages.JobSpec{Options: messages.Options{Validate: messages.ValidateRun}},
		ContextUsed: []messages.StageContext{
			{Stage: messages.StagePlan, Chunks: []messages.ContextChunk{{File: "a.md"}, {File: "b.md"}}},
			{Stage: messages.StageFix, Iteration: 1, Retrieved: true, Chunks: []messages.ContextChunk{{File: "zrl/format.md", Index: 3, Heading: "Values", Score: 21.58}}},
		}}
	var b bytes.Buffer
	printSummary(&b, r)
	for _, want := range []string{
		"SUCCESS: the generated script ran on the samples and wrote its outputs (validate: run)",
		"  plan   iteration 0  2 chunk(s), all of it\n",
		"  fix    iteration 1  1 chunk(s), retrieved; best zrl/format.md part 3 (Values), score 21.58\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	printSummary(&b, &messages.Result{Success: true})
	if !strings.HasPrefix(b.String(), "SUCCESS: the generated script passed its tests") || strings.Contains(b.String(), "documentation used") {
		t.Errorf("a tested job's summary changed:\n%s", b.String())
	}
}
