package bus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/metrics"
	"github.com/autocoder/autocoder/pkg/messages"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
)

func TestPrometheusMetrics(t *testing.T) {
	t.Parallel()
	var none *metrics.Builder
	if m, err := none.Bus(); m != nil || err != nil {
		t.Fatalf("a nil builder's Bus() = %v, %v; want nil, nil", m, err)
	}
	reg := prometheus.NewRegistry()
	m, err := metrics.NewBuilderOn(reg).Bus()
	if err != nil {
		t.Fatal(err)
	}
	// A second worker of the process shares the families.
	if _, err := metrics.NewBuilderOn(reg).Bus(); err != nil {
		t.Errorf("a second bus observer on one registry: %v", err)
	}
	pub, res := llmWorkers(t, bus.ProvisionConfig{})
	rec := newRecMetrics()
	startWorker(t, res.StageConsumers[messages.PoolLLM], bus.HandlerFunc(func(_ context.Context, msg *bus.Message) error {
		if seqOf(t, msg) == 2 {
			return bus.Permanent(errors.New("bad"))
		}
		return nil
	}), bus.WorkerConfig{Metrics: tee{m, rec}})
	command(t, pub, "prom", 1)
	command(t, pub, "prom", 2)
	recv(t, rec.settled, "first settle")
	recv(t, rec.settled, "second settle")

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, mt := range f.GetMetric() {
			key := f.GetName()
			for _, l := range mt.GetLabel() {
				key += " " + l.GetName() + "=" + l.GetValue()
			}
			switch {
			case mt.Counter != nil:
				got[key] = mt.GetCounter().GetValue()
			case mt.Gauge != nil:
				got[key] = mt.GetGauge().GetValue()
			case mt.Histogram != nil:
				got[key+" count"] = float64(mt.GetHistogram().GetSampleCount())
			}
		}
	}
	want := map[string]float64{
		"autocoder_bus_messages_total consumer=llm-workers outcome=ack":  1,
		"autocoder_bus_messages_total consumer=llm-workers outcome=term": 1,
		"autocoder_bus_in_flight consumer=llm-workers":                   0,
		"autocoder_bus_handle_seconds consumer=llm-workers count":        2,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}

// tee sends measurements to two Metrics.
type tee [2]bus.Metrics

func (t tee) HandleStarted(c string) {
	t[0].HandleStarted(c)
	t[1].HandleStarted(c)
}

func (t tee) HandleDone(c string, d time.Duration) {
	t[0].HandleDone(c, d)
	t[1].HandleDone(c, d)
}

func (t tee) MessageSettled(c string, o bus.Outcome) {
	t[0].MessageSettled(c, o)
	t[1].MessageSettled(c, o)
}
