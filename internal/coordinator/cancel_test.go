package coordinator_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// announcer is the env's publisher that also records core announcements.
type announcer struct {
	*bus.Publisher
	mu  sync.Mutex
	got []string
}

func (a *announcer) PublishCore(subject string, v any) error {
	a.mu.Lock()
	a.got = append(a.got, subject)
	a.mu.Unlock()
	return a.Publisher.PublishCore(subject, v)
}

func cancelMsg(t *testing.T, req messages.CancelJob) *bus.Message {
	t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return bus.NewMessage(bus.SubjectJobsCancel, b, nil, 1)
}

// TestCancelRequest: a cancel request on the jobs stream finishes the job
// with who asked, when and why on its result, and announces the
// cancellation to the workers; bad requests are dropped (permanent), not
// retried.
func TestCancelRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pub := &announcer{Publisher: e.pub}
	c := e.coordinator(t, nil, pub, nil)
	if err := c.HandleJobs(ctxT(t), submitMsg(t, "job-c", answerSpec())); err != nil {
		t.Fatal(err)
	}
	req := messages.CancelJob{V: messages.WireVersion, JobID: "job-c", By: "http:ops", Reason: "wrong data"}
	if err := c.HandleJobs(ctxT(t), cancelMsg(t, req)); err != nil {
		t.Fatal(err)
	}
	res := e.result(t, "job-c")
	want := messages.Cancellation{By: "http:ops", At: t0, Reason: "wrong data"}
	if res.Cancelled == nil || *res.Cancelled != want || res.Status != messages.StatusFailed || res.Error != "cancelled by http:ops: wrong data" {
		t.Errorf("result: status %s, error %q, cancelled %+v", res.Status, res.Error, res.Cancelled)
	}
	pub.mu.Lock()
	got := append([]string(nil), pub.got...)
	pub.mu.Unlock()
	if len(got) != 1 || got[0] != bus.CancelledSubject("job-c") {
		t.Errorf("announcements %v, want one on %s", got, bus.CancelledSubject("job-c"))
	}
	for name, msg := range map[string]*bus.Message{
		"not JSON":         bus.NewMessage(bus.SubjectJobsCancel, []byte("{"), nil, 1),
		"a bad job id":     cancelMsg(t, messages.CancelJob{JobID: "a.b"}),
		"a reason too big": cancelMsg(t, messages.CancelJob{JobID: "job-c", Reason: string(make([]byte, messages.MaxCancelReasonBytes+1))}),
	} {
		if err := c.HandleJobs(context.Background(), msg); !bus.IsPermanent(err) {
			t.Errorf("%s: %v, want a permanent error", name, err)
		}
	}
}
