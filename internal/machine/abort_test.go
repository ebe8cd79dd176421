package machine

import (
	"testing"
	"time"

	"github.com/autocoder/autocoder/pkg/messages"
)

// TestAbortEndsTheJobWithTheReason: an abort finishes a running job as
// failed with the coordinator's reason and no canceller; a finished job
// and an unknown one are left as they are.
func TestAbortEndsTheJobWithTheReason(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.Normalize("")
	s, _ := Step(State{}, Input{Kind: InputSubmitted, Time: t0, Submit: &Submission{JobID: "j", Spec: spec}})
	at := t0.Add(time.Minute)
	done, cmds := Step(s, Input{Kind: InputAbort, Time: at, Reason: "state over its bound"})
	var res *messages.Result
	for _, c := range cmds {
		if c.Finish != nil {
			res = c.Finish
		}
	}
	if res == nil || res.Status != messages.StatusFailed || res.Error != "state over its bound" || res.Cancelled != nil ||
		!res.FinishedAt.Equal(at) || len(done.Pending) != 0 || !done.Done() {
		t.Fatalf("abort: result %+v, pending %v", res, done.Pending)
	}
	if _, cmds := Step(done, Input{Kind: InputAbort, Time: at, Reason: "again"}); cmds != nil {
		t.Errorf("an abort of a finished job gave %+v", cmds)
	}
	if _, cmds := Step(State{}, Input{Kind: InputAbort, Time: at}); cmds != nil {
		t.Errorf("an abort of no job gave %+v", cmds)
	}
}
