package metrics

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// queueCollector reports each stage pool's queue at scrape time, from its
// consumer's info: messages waiting for a worker, messages a worker holds,
// and the age of the oldest waiting one (read from the stream). It asks
// NATS on every scrape, so register it in one process per deployment (the
// coordinator's), not in every worker.
type queueCollector struct {
	res     *bus.Resources
	timeout time.Duration
	now     func() time.Time

	pending, inProgress, oldest *prometheus.Desc
}

var _ prometheus.Collector = (*queueCollector)(nil)

// newQueueCollector collects the queues of res's stage pools.
func newQueueCollector(res *bus.Resources) *queueCollector {
	pool := []string{"pool"}
	return &queueCollector{res: res, timeout: 2 * time.Second, now: time.Now,
		pending: prometheus.NewDesc(QueuePendingMessages,
			"Stage commands waiting for a worker, by pool (the consumer's pending count).", pool, nil),
		inProgress: prometheus.NewDesc(QueueInProgressMessages,
			"Stage commands delivered to a worker and not yet acknowledged, by pool.", pool, nil),
		oldest: prometheus.NewDesc(QueueOldestPendingAge,
			"Age of the oldest stage command waiting for a worker, by pool (0 when none waits).", pool, nil),
	}
}

// Describe implements prometheus.Collector.
func (q *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- q.pending
	ch <- q.inProgress
	ch <- q.oldest
}

// Collect implements prometheus.Collector. A pool whose consumer cannot be
// read is left out of this scrape (its series go stale, which alerts can see).
func (q *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), q.timeout)
	defer cancel()
	for _, pool := range messages.Pools() {
		cons, ok := q.res.StageConsumers[pool]
		if !ok {
			continue
		}
		info, err := cons.Info(ctx)
		if err != nil {
			continue
		}
		p := string(pool)
		ch <- prometheus.MustNewConstMetric(q.pending, prometheus.GaugeValue, float64(info.NumPending), p)
		ch <- prometheus.MustNewConstMetric(q.inProgress, prometheus.GaugeValue, float64(info.NumAckPending), p)
		ch <- prometheus.MustNewConstMetric(q.oldest, prometheus.GaugeValue, q.oldestAge(ctx, q.res.Stages[pool], info), p)
	}
}

// oldestAge is how long the next message the consumer would deliver has
// waited: the stream holds it at the sequence after the last delivered.
func (q *queueCollector) oldestAge(ctx context.Context, stream jetstream.Stream, info *jetstream.ConsumerInfo) float64 {
	if info.NumPending == 0 || stream == nil {
		return 0
	}
	msg, err := stream.GetMsg(ctx, info.Delivered.Stream+1)
	if err != nil {
		return 0
	}
	return max(q.now().Sub(msg.Time).Seconds(), 0)
}
