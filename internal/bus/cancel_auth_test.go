package bus_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestCancelPermissions: a producer asks to cancel a job on its own
// cancel subject only (the jobs stream stores it), never on another
// producer's or on the coordinator role's, so the coordinator knows who
// asked; only the coordinator announces a cancellation, and each worker
// hears it.
func TestCancelPermissions(t *testing.T) {
	t.Parallel()
	s := newAuthServer(t)
	p := s.connect(t, bus.ClientAuth{NKeyFile: s.seed, Role: bus.RoleProducer})
	me, err := bus.ClientAuth{NKeyFile: s.seed}.Identity()
	if err != nil {
		t.Fatal(err)
	}
	req := messages.CancelJob{V: messages.WireVersion, JobID: "job1", By: "cli:ann@box"}
	if err := bus.NewPublisher(p.js, bus.PublisherConfig{}).PublishJSON(ctxT(t), bus.CancelSubject(me), req, bus.CancelMsgID("job1")); err != nil {
		t.Errorf("producer: ask to cancel as itself: %v", err)
	}
	p.refused(t, "producer: ask to cancel as another producer", publishRaw(p, bus.CancelSubject("someone-else")))
	p.refused(t, "producer: ask on the coordinator's cancel subject (where by is believed)", publishRaw(p, bus.SubjectJobsCancel))
	p.refused(t, "producer: announce a cancellation", publishRaw(p, bus.CancelledSubject("job1")))
	if n := streamMsgs(t, s.res.Jobs); n != 1 {
		t.Errorf("the jobs stream holds %d cancel requests, want the 1 sent as itself", n)
	}

	admin := bus.NewPublisher(s.admin, bus.PublisherConfig{})
	for _, auth := range []bus.ClientAuth{
		{User: "llm", Password: testPassword, Role: bus.RoleLLMWorker},
		{User: "sandbox", Password: testPassword, Role: bus.RoleSandboxWorker},
	} {
		w := s.connect(t, auth)
		w.refused(t, string(auth.Role)+": ask to cancel", publishRaw(w, bus.SubjectJobsCancel))
		w.refused(t, string(auth.Role)+": ask to cancel as a producer", publishRaw(w, bus.CancelSubject(me)))
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
