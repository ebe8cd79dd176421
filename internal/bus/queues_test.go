package bus_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/metrics"
	"github.com/autocoder/autocoder/pkg/messages"
)

// gaugesByPool gathers reg and returns family -> pool -> value.
func gaugesByPool(t *testing.T, reg *prometheus.Registry) map[string]map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for _, mf := range mfs {
		out[mf.GetName()] = map[string]float64{}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "pool" {
					out[mf.GetName()][l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return out
}

func TestQueueCollector(t *testing.T) {
	t.Parallel()
	pub, res := llmWorkers(t, bus.ProvisionConfig{})
	reg := prometheus.NewRegistry()
	if _, err := metrics.NewBuilderOn(reg).Coordinator(res); err != nil { // the coordinator reports the queues
		t.Fatal(err)
	}

	got := gaugesByPool(t, reg)
	for _, name := range []string{metrics.QueuePendingMessages, metrics.QueueInProgressMessages, metrics.QueueOldestPendingAge} {
		for _, pool := range messages.Pools() {
			if v, ok := got[name][string(pool)]; !ok || v != 0 {
				t.Errorf("empty queues: %s{pool=%s} = %v (present %v), want 0", name, pool, v, ok)
			}
		}
	}

	command(t, pub, "queued", 1)
	command(t, pub, "queued", 2)
	llm := string(messages.PoolLLM)
	// The consumer counts a stored message as pending a moment after the
	// stream acknowledged it.
	waitFor(t, "two pending", func() bool {
		got = gaugesByPool(t, reg)
		return got[metrics.QueuePendingMessages][llm] == 2 && got[metrics.QueueOldestPendingAge][llm] > 0
	})
	if v := got[metrics.QueuePendingMessages][string(messages.PoolSandbox)]; v != 0 {
		t.Errorf("pending{pool=sandbox} = %v, want 0", v)
	}

	// A worker that holds one command: in progress, no longer pending.
	held := make(chan struct{})
	release := make(chan struct{})
	startWorker(t, res.StageConsumers[messages.PoolLLM], bus.HandlerFunc(func(ctx context.Context, _ *bus.Message) error {
		held <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}), bus.WorkerConfig{Concurrency: 1})
	recv(t, held, "first command held")
	waitFor(t, "one pending, one in progress", func() bool {
		g := gaugesByPool(t, reg)
		return g[metrics.QueuePendingMessages][llm] == 1 && g[metrics.QueueInProgressMessages][llm] == 1
	})
	close(release)
	recv(t, held, "second command held")
	waitFor(t, "none pending", func() bool {
		g := gaugesByPool(t, reg)
		return g[metrics.QueuePendingMessages][llm] == 0 && g[metrics.QueueOldestPendingAge][llm] == 0
	})
}

func TestEmbeddedMonitorEndpoint(t *testing.T) {
	t.Parallel()
	srv, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: t.TempDir(), MonitorListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	url := srv.MonitorURL()
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("MonitorURL() = %q", url)
	}
	resp, err := http.Get(url + "/jsz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"config"`) {
		t.Errorf("GET /jsz: %s\n%s", resp.Status, body)
	}

	off, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(off.Shutdown)
	if u := off.MonitorURL(); u != "" {
		t.Errorf("without MonitorListen, MonitorURL() = %q, want none", u)
	}
	if _, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: t.TempDir(), MonitorListen: "nowhere"}); err == nil {
		t.Error("MonitorListen \"nowhere\" was accepted")
	}
}
