package stagework_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/bus/bustest"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestOfferedResults: an executor offers each result to the coordinators
// (bus/offer.go) on its pool's offer subject and publishes it on the
// result stream only when no coordinator takes it: one that answers not
// taken, none listening, or none answering in time.
func TestOfferedResults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		answer    func(m *nats.Msg)
		published bool
	}{
		{"taken", func(m *nats.Msg) { _ = m.Respond([]byte(bus.OfferTaken)) }, false},
		{"not taken", func(m *nats.Msg) { _ = m.Respond(nil) }, true},
		{"no coordinator", nil, true},
		{"no answer", func(*nats.Msg) {}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			be := bustest.Start(t, bus.ProvisionConfig{MemoryStorage: true})
			offered := make(chan messages.StageResult, 1)
			if tc.answer != nil {
				sub, err := be.Conn.QueueSubscribe(bus.PoolOfferSubjects(messages.PoolLLM), bus.QueueResultOffers, func(m *nats.Msg) {
					var r messages.StageResult
					if err := json.Unmarshal(m.Data, &r); err != nil {
						t.Errorf("offer: %v", err)
					}
					offered <- r
					tc.answer(m)
				})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = sub.Unsubscribe() })
			}
			pub := bus.NewPublisher(be.JS, bus.PublisherConfig{OfferWait: 200 * time.Millisecond})
			x := newExecutor(t, &handler{version: "v1"}, pub, nil, func(c *stagework.Config) { c.Offers = pub })
			if err := x.Handle(ctxT(t), message(t, command(messages.CacheAuto), 1)); err != nil {
				t.Fatal(err)
			}
			if tc.answer != nil {
				if r := <-offered; r.JobID != "job-1" || r.Seq != 3 || r.Stage != messages.StagePlan || len(r.Output) == 0 {
					t.Errorf("offered %+v, want the plan's result", r)
				}
			}
			info, err := be.Resources.Results[messages.PoolLLM].Info(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			if got := info.State.Msgs == 1; got != tc.published {
				t.Errorf("%d results on the stream, want published %v", info.State.Msgs, tc.published)
			}
		})
	}
}
