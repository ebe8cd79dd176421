package bus_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestClaimCheckCarriesBodiesPastThePayloadLimit: a 3 MB stage result (three
// times the server's max payload) is published and handed to the handler
// whole; a small one travels inline; one over MaxClaim is refused with
// ErrPayloadTooLarge before anything is stored.
func TestClaimCheckCarriesBodiesPastThePayloadLimit(t *testing.T) {
	t.Parallel()
	js, res := provisioned(t, bus.ProvisionConfig{})
	pub := bus.NewPublisher(js, bus.PublisherConfig{MaxClaim: 8 << 20})
	big := strings.Repeat("x", 3<<20)
	for i, body := range []string{"small", big} {
		r := messages.StageResult{V: messages.WireVersion, JobID: "job-claim", Seq: i + 1, Stage: messages.StagePlan, Error: body}
		if err := pub.PublishJSON(ctxT(t), bus.ResultSubject(messages.PoolLLM, r.JobID), r, bus.ResultMsgID(messages.PoolLLM, r.JobID, r.Seq)); err != nil {
			t.Fatalf("publish %d bytes: %v", len(body), err)
		}
	}
	got := make(chan *bus.Message, 2)
	stop := startWorker(t, res.ResultConsumers[messages.PoolLLM], bus.HandlerFunc(func(_ context.Context, m *bus.Message) error {
		got <- m
		return nil
	}), bus.WorkerConfig{Claims: res.Claims})
	defer stop()
	for _, want := range []string{"small", big} {
		m := recv(t, got, "a result")
		var r messages.StageResult
		if err := m.DecodeJSON(&r); err != nil {
			t.Fatal(err)
		}
		if r.Error != want {
			t.Errorf("seq %d: body of %d bytes arrived as %d bytes", r.Seq, len(want), len(r.Error))
		}
		if checked := m.Headers().Get(bus.HeaderClaimCheck) != ""; checked != (len(want) > bus.DefaultClaimThreshold) {
			t.Errorf("seq %d (%d bytes): claim-checked %v", r.Seq, len(want), checked)
		}
	}

	huge := messages.StageResult{V: messages.WireVersion, JobID: "job-claim", Seq: 9, Stage: messages.StagePlan, Error: strings.Repeat("y", 9<<20)}
	err := pub.PublishJSON(ctxT(t), bus.ResultSubject(messages.PoolLLM, huge.JobID), huge, "")
	if !errors.Is(err, bus.ErrPayloadTooLarge) || !strings.Contains(err.Error(), "8 MiB") {
		t.Errorf("publish of 9 MiB with MaxClaim 8 MiB: %v, want ErrPayloadTooLarge naming 8 MiB", err)
	}
}

// TestClaimCheckRefusesASwappedBody: a body whose content does not match
// the name its message gives (someone overwrote the object) is terminated,
// never handed to the handler.
func TestClaimCheckRefusesASwappedBody(t *testing.T) {
	t.Parallel()
	js, res := provisioned(t, bus.ProvisionConfig{})
	pub := bus.NewPublisher(js, bus.PublisherConfig{ClaimThreshold: 16})
	r := messages.StageResult{V: messages.WireVersion, JobID: "job-swap", Seq: 1, Stage: messages.StagePlan, Error: strings.Repeat("a", 100)}
	if err := pub.PublishJSON(ctxT(t), bus.ResultSubject(messages.PoolLLM, r.JobID), r, ""); err != nil {
		t.Fatal(err)
	}
	infos, err := res.Claims.List(ctxT(t))
	if err != nil || len(infos) != 1 {
		t.Fatalf("claims store holds %d objects (%v), want 1", len(infos), err)
	}
	if _, err := res.Claims.PutBytes(ctxT(t), infos[0].Name, bytes.Repeat([]byte("b"), 100)); err != nil {
		t.Fatal(err)
	}
	handled := make(chan *bus.Message, 1)
	rec := newRecMetrics()
	stop := startWorker(t, res.ResultConsumers[messages.PoolLLM], bus.HandlerFunc(func(_ context.Context, m *bus.Message) error {
		handled <- m
		return nil
	}), bus.WorkerConfig{Claims: res.Claims, Metrics: rec})
	defer stop()
	if outcome := recv(t, rec.settled, "the settlement"); outcome != bus.OutcomeTerm {
		t.Errorf("swapped body settled as %q, want %q", outcome, bus.OutcomeTerm)
	}
	select {
	case m := <-handled:
		t.Errorf("handler got the swapped body %q", m.Data())
	default:
	}
}

// TestRedeemBodyOutsideAWorker: a claim-checked event read straight from
// its stream (as watchers do) is redeemed whole by RedeemBody.
func TestRedeemBodyOutsideAWorker(t *testing.T) {
	t.Parallel()
	js, res := provisioned(t, bus.ProvisionConfig{})
	pub := bus.NewPublisher(js, bus.PublisherConfig{ClaimThreshold: 16})
	ev := messages.Event{V: messages.WireVersion, JobID: "job-ev", Type: messages.EventJobFinished, Message: strings.Repeat("m", 100)}
	if err := pub.PublishJSON(ctxT(t), bus.EventSubject(ev.JobID), ev, ""); err != nil {
		t.Fatal(err)
	}
	raw, err := res.Events.GetLastMsgForSubject(ctxT(t), bus.EventSubject(ev.JobID))
	if err != nil {
		t.Fatal(err)
	}
	if len(raw.Data) != 0 || raw.Header.Get(bus.HeaderClaimCheck) == "" {
		t.Fatalf("event of %d bytes on the stream, header %v: want it claim-checked", len(raw.Data), raw.Header)
	}
	body, err := bus.RedeemBody(ctxT(t), res.Claims, raw.Subject, raw.Header, raw.Data)
	if err != nil {
		t.Fatal(err)
	}
	var got messages.Event
	if err := json.Unmarshal(body, &got); err != nil || got.Message != ev.Message {
		t.Errorf("redeemed event %+v (%v): want the published one", got, err)
	}
}
