package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/bus/bustest"
	"github.com/autocoder/autocoder/pkg/client"
	"github.com/autocoder/autocoder/pkg/messages"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestClaimCheckBothWays: the client's own publisher sends a submission
// over the threshold by claim check as autocoder's bus reads it, and the
// client reads an event autocoder's bus sent by claim check.
func TestClaimCheckBothWays(t *testing.T) {
	t.Parallel()
	env := bustest.Start(t, bus.ProvisionConfig{MemoryStorage: true})
	c := client.New(env.JS, client.Config{})
	big := strings.Repeat("x", messages.ClaimThreshold+1)
	id := client.NewJobID()
	if err := c.Submit(ctxT(t), id, messages.JobSpec{Prompt: "p", Schema: big}); err != nil {
		t.Fatal(err)
	}
	m, err := env.Resources.Jobs.GetLastMsgForSubject(ctxT(t), messages.SubjectJobsSubmit)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Data) != 0 || m.Header.Get(messages.HeaderClaimCheck) == "" || m.Header.Get(messages.HeaderJobID) != id {
		t.Fatalf("submission on the stream: %d bytes, headers %v", len(m.Data), m.Header)
	}
	body, err := bus.RedeemBody(ctxT(t), env.Resources.Claims, m.Subject, m.Header, m.Data)
	if err != nil {
		t.Fatal(err)
	}
	var sub messages.SubmitJob
	if err := json.Unmarshal(body, &sub); err != nil || sub.JobID != id || sub.Spec.Schema != big {
		t.Fatalf("redeemed submission: %v, job %q, schema %d bytes", err, sub.JobID, len(sub.Spec.Schema))
	}

	// An event too large for a message, then the result: Watch sees both.
	ev := messages.Event{V: 1, JobID: id, Type: messages.EventJobFinished, Message: big, Time: time.Now()}
	if err := env.Publisher.PublishJSON(ctxT(t), bus.EventSubject(id), ev, "ev-"+id); err != nil {
		t.Fatal(err)
	}
	res, _ := json.Marshal(messages.Result{V: 1, JobID: id, Status: messages.StatusSucceeded, Success: true})
	if _, err := env.Resources.JobResults.Put(ctxT(t), messages.JobKey(id), res); err != nil {
		t.Fatal(err)
	}
	var seen []int
	got, err := c.Watch(ctxT(t), id, func(e messages.Event) error { seen = append(seen, len(e.Message)); return nil })
	if err != nil || !got.Success || len(seen) != 1 || seen[0] != len(big) {
		t.Fatalf("Watch: %v, %+v, event sizes %v", err, got, seen)
	}
}

// TestRequestUnansweredEnds: a request a coordinator took and never
// answered (it stopped) ends after RequestWait, with an error, though its
// context has no deadline (an HTTP handler's has none).
func TestRequestUnansweredEnds(t *testing.T) {
	t.Parallel()
	env := bustest.Start(t, bus.ProvisionConfig{MemoryStorage: true})
	taken, err := env.JS.Conn().SubscribeSync(messages.SubjectAPISubmit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = taken.Unsubscribe() })
	c := client.New(env.JS, client.Config{RequestWait: 300 * time.Millisecond})
	done := make(chan error, 1)
	go func() {
		_, err := c.SubmitRequest(context.Background(), messages.APIRequest{Spec: &messages.JobSpec{Prompt: "p"}})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("an unanswered request: %v, want it ended by its wait", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("an unanswered request still waits")
	}
}

// TestWaitBacksOff: Wait on a job that does not finish looks again soon at
// first and then every second at most often: over three seconds, a few
// reads, where a look every 20 ms made about 150.
func TestWaitBacksOff(t *testing.T) {
	t.Parallel()
	env := bustest.Start(t, bus.ProvisionConfig{MemoryStorage: true})
	c := client.New(env.JS, client.Config{})
	before := env.JS.Conn().Stats().OutMsgs
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := c.Wait(ctx, client.NewJobID()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on a job that never finishes: %v", err)
	}
	if n := env.JS.Conn().Stats().OutMsgs - before; n > 40 {
		t.Errorf("Wait sent %d messages in 3 s: it did not back off", n)
	}
}
