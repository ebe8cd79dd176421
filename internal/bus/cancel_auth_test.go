package bus_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestCancelPermissions: a producer may ask to cancel a job (the jobs
// stream stores it); only the coordinator announces a cancellation, and
// each worker hears it.
func TestCancelPermissions(t *testing.T) {
	t.Parallel()
	s := newAuthServer(t)
	p := s.connect(t, bus.ClientAuth{NKeyFile: s.seed, Role: bus.RoleProducer})
	req := messages.CancelJob{V: messages.WireVersion, JobID: "job1", By: "cli:ann@box"}
	if err := bus.NewPublisher(p.js, bus.PublisherConfig{}).PublishJSON(ctxT(t), bus.SubjectJobsCancel, req, bus.CancelMsgID("job1")); err != nil {
		t.Errorf("producer: ask to cancel: %v", err)
	}
	p.refused(t, "producer: announce a cancellation", publishRaw(p, bus.CancelledSubject("job1")))

	admin := bus.NewPublisher(s.admin, bus.PublisherConfig{})
	for _, auth := range []bus.ClientAuth{
		{User: "llm", Password: testPassword, Role: bus.RoleLLMWorker},
		{User: "sandbox", Password: testPassword, Role: bus.RoleSandboxWorker},
	} {
		w := s.connect(t, auth)
		w.refused(t, string(auth.Role)+": ask to cancel", publishRaw(w, bus.SubjectJobsCancel))
		w.refused(t, string(auth.Role)+": announce a cancellation", publishRaw(w, bus.CancelledSubject("job1")))
		heard := make(chan *nats.Msg, 1)
		sub, err := w.nc.ChanSubscribe(bus.SubjectCancelledAll, heard)
		if err != nil {
			t.Fatalf("%s: subscribe to cancellations: %v", auth.Role, err)
		}
		if err := w.nc.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := admin.PublishCore(bus.CancelledSubject("job1"), req); err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-heard:
			if m.Subject != bus.CancelledSubject("job1") {
				t.Errorf("%s heard %s", auth.Role, m.Subject)
			}
		case <-time.After(testTimeout):
			t.Errorf("%s did not hear the cancellation", auth.Role)
		}
		sub.Unsubscribe()
	}
}
