package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// queueCollector reports each stage pool's queue at scrape time, from its
// consumer's info: messages waiting for a worker, messages a worker holds,
// and the age of the oldest waiting one (read from the stream); and the
// pool's capacity (the slots of its live workers, from their beats in the
// roster), how many workers it has and whether it is paused. It asks NATS
// on every scrape, so register it in one process per deployment (the
// coordinator's), not in every worker.
type queueCollector struct {
	res     *bus.Resources
	timeout time.Duration
	now     func() time.Time

	pending, inProgress, oldest *prometheus.Desc
	capacity, workers, paused   *prometheus.Desc
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
		capacity: prometheus.NewDesc(PoolCapacitySlots,
			"Stages the pool's live workers can run at once (the sum of their slots), by pool.", pool, nil),
		workers: prometheus.NewDesc(PoolWorkers,
			"Live worker processes of the pool (beating in the roster), by pool.", pool, nil),
		paused: prometheus.NewDesc(PoolPaused,
			"1 while the pool is paused (its workers fetch nothing new), else 0, by pool.", pool, nil),
	}
}

// Describe implements prometheus.Collector.
func (q *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- q.pending
	ch <- q.inProgress
	ch <- q.oldest
	ch <- q.capacity
	ch <- q.workers
	ch <- q.paused
}

// Collect implements prometheus.Collector. A pool whose consumer cannot be
// read is left out of this scrape (its series go stale, which alerts can
// see); so are the capacity series when the roster cannot be read.
func (q *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), q.timeout)
	defer cancel()
	var beats []messages.WorkerBeat
	roster := q.res.Workers != nil
	if roster {
		var err error
		beats, err = bus.Roster(ctx, q.res.Workers)
		roster = err == nil
	}
	for _, pool := range messages.Pools() {
		p := string(pool)
		if qs, err := bus.PoolQueue(ctx, q.res, pool, q.now()); err == nil {
			ch <- prometheus.MustNewConstMetric(q.pending, prometheus.GaugeValue, float64(qs.Pending), p)
			ch <- prometheus.MustNewConstMetric(q.inProgress, prometheus.GaugeValue, float64(qs.InFlight), p)
			ch <- prometheus.MustNewConstMetric(q.oldest, prometheus.GaugeValue, qs.OldestPendingSeconds, p)
		}
		if roster {
			slots, n := bus.CapacityOf(beats, pool)
			ch <- prometheus.MustNewConstMetric(q.capacity, prometheus.GaugeValue, float64(slots), p)
			ch <- prometheus.MustNewConstMetric(q.workers, prometheus.GaugeValue, float64(n), p)
		}
		if q.res.Pools != nil {
			if pp, err := bus.PoolPauseOf(ctx, q.res.Pools, pool); err == nil {
				ch <- prometheus.MustNewConstMetric(q.paused, prometheus.GaugeValue, boolValue(pp != nil && pp.Paused), p)
			}
		}
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
