package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestOversizedModelReplyEndsTheJob: a 5 MB model reply is cut at the
// client's 4 MiB cap; the stage fails with that reason, permanently (one
// request, not five retries), and the job ends saying so: no hang, no
// unbounded memory.
func TestOversizedModelReplyEndsTheJob(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	fake.On("plan", fakellm.Oversized(5<<20))
	st := startLocal(t, testConfig(t, fake))
	res := runJob(t, st, planFirst(answerSpec()))
	if res.Success || res.Status != messages.StatusFailed {
		t.Fatalf("success %v, status %s: want a failed job", res.Success, res.Status)
	}
	for _, want := range []string{"stage plan failed", "model reply larger than 4 MiB"} {
		if !strings.Contains(res.Error, want) {
			t.Errorf("error %q does not say %q", res.Error, want)
		}
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("%d requests for an oversized reply, want 1 (it is permanent)", n)
	}
}

// TestOversizedPromptIsNotSent: a 300 KB task text is over the stages'
// 256 KiB prompt budget: the plan stage fails saying so and the model is
// never called.
func TestOversizedPromptIsNotSent(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	scriptBasics(fake, sol(code("6 * 7")))
	st := startLocal(t, testConfig(t, fake))
	spec := answerSpec()
	spec.Prompt += strings.Repeat(" Really, write 42.", 300<<10/18)
	// Planning first, the plan stage refuses the prompt; in one round,
	// the code and tests commands (the prompt twice) make a job state
	// over its bound, and the client refuses the submission with that
	// reason before anything is sent.
	oneRound := spec
	oneRound.Options.FirstPass = messages.FirstPassOneRound
	err := st.Client.Submit(context.Background(), client.NewJobID(), oneRound)
	if err == nil || !strings.Contains(err.Error(), "over the 1008 KiB bound") {
		t.Errorf("one round: submit %v, want the state bound named", err)
	}
	for fp, wants := range map[messages.FirstPass][]string{
		messages.FirstPassPlanFirst: {"stage plan failed", "over the 256 KiB budget"},
	} {
		spec.Options.FirstPass = fp
		res := runJob(t, st, spec)
		if res.Success || res.Status != messages.StatusFailed {
			t.Fatalf("%s: success %v, status %s: want a failed job", fp, res.Success, res.Status)
		}
		for _, want := range wants {
			if !strings.Contains(res.Error, want) {
				t.Errorf("%s: error %q does not say %q", fp, res.Error, want)
			}
		}
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("%d model calls for a prompt over budget, want none", n)
	}
}
