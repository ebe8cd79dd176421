package bus

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/internal/metrics"
	"github.com/autocoder/autocoder/pkg/messages"
)

// QueueCollector reports each stage pool's queue at scrape time, from its
// consumer's info: messages waiting for a worker, messages a worker holds,
// and the age of the oldest waiting one (read from the stream); and the
// pool's capacity (the slots of its live workers, from their beats in the
// roster), how many workers it has and whether it is paused. It asks NATS
// on every scrape, so register it in one process per deployment (the
// coordinator's), not in every worker.
type QueueCollector struct {
	res     *Resources
	timeout time.Duration
	now     func() time.Time

	pending, inProgress, oldest *prometheus.Desc
	capacity, workers, paused   *prometheus.Desc
}

var _ prometheus.Collector = (*QueueCollector)(nil)

// NewQueueCollector collects the queues of res's stage pools.
func NewQueueCollector(res *Resources) *QueueCollector {
	pool := []string{"pool"}
	return &QueueCollector{res: res, timeout: 2 * time.Second, now: time.Now,
		pending: prometheus.NewDesc(metrics.QueuePendingMessages,
			"Stage commands waiting for a worker, by pool (the consumer's pending count).", pool, nil),
		inProgress: prometheus.NewDesc(metrics.QueueInProgressMessages,
			"Stage commands delivered to a worker and not yet acknowledged, by pool.", pool, nil),
		oldest: prometheus.NewDesc(metrics.QueueOldestPendingAge,
			"Age of the oldest stage command waiting for a worker, by pool (0 when none waits).", pool, nil),
		capacity: prometheus.NewDesc(metrics.PoolCapacitySlots,
			"Stages the pool's live workers can run at once (the sum of their slots), by pool.", pool, nil),
		workers: prometheus.NewDesc(metrics.PoolWorkers,
			"Live worker processes of the pool (beating in the roster), by pool.", pool, nil),
		paused: prometheus.NewDesc(metrics.PoolPaused,
			"1 while the pool is paused (its workers fetch nothing new), else 0, by pool.", pool, nil),
	}
}

// Describe implements prometheus.Collector.
func (q *QueueCollector) Describe(ch chan<- *prometheus.Desc) {
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
func (q *QueueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), q.timeout)
	defer cancel()
	var beats []messages.WorkerBeat
	roster := q.res.Workers != nil
	if roster {
		var err error
		beats, err = Roster(ctx, q.res.Workers)
		roster = err == nil
	}
	for _, pool := range Pools() {
		p := string(pool)
		if qs, err := PoolQueue(ctx, q.res, pool, q.now()); err == nil {
			ch <- prometheus.MustNewConstMetric(q.pending, prometheus.GaugeValue, float64(qs.Pending), p)
			ch <- prometheus.MustNewConstMetric(q.inProgress, prometheus.GaugeValue, float64(qs.InFlight), p)
			ch <- prometheus.MustNewConstMetric(q.oldest, prometheus.GaugeValue, qs.OldestPendingSeconds, p)
		}
		if roster {
			slots, n := capacityOf(beats, pool)
			ch <- prometheus.MustNewConstMetric(q.capacity, prometheus.GaugeValue, float64(slots), p)
			ch <- prometheus.MustNewConstMetric(q.workers, prometheus.GaugeValue, float64(n), p)
		}
		if q.res.Pools != nil {
			if pp, err := PoolPauseOf(ctx, q.res.Pools, pool); err == nil {
				ch <- prometheus.MustNewConstMetric(q.paused, prometheus.GaugeValue, boolValue(pp != nil && pp.Paused), p)
			}
		}
	}
}

// PoolQueue reads pool's queue from its consumer's info: the stage
// commands waiting (and how long, at now, the first has waited) and those
// delivered and not yet done. Slots, Workers and Pause are left for the
// caller (Roster, PoolPauseOf).
func PoolQueue(ctx context.Context, res *Resources, pool Pool, now time.Time) (messages.PoolView, error) {
	v := messages.PoolView{Pool: string(pool)}
	cons, ok := res.StageConsumers[pool]
	if !ok {
		return v, fmt.Errorf("bus: no consumer for pool %s", pool)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return v, fmt.Errorf("bus: read the queue of pool %s: %w", pool, err)
	}
	v.Pending, v.InFlight = info.NumPending, info.NumAckPending
	v.OldestPendingSeconds = oldestAge(ctx, res.Stages[pool], info, now)
	return v, nil
}

// capacityOf is the slots and number of pool's workers in beats.
func capacityOf(beats []messages.WorkerBeat, pool Pool) (slots, workers int) {
	for _, b := range beats {
		if b.Pool == string(pool) {
			slots += b.Slots
			workers++
		}
	}
	return slots, workers
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// oldestAge is how long the next message the consumer would deliver has
// waited: the stream holds it at the sequence after the last delivered.
func oldestAge(ctx context.Context, stream jetstream.Stream, info *jetstream.ConsumerInfo, now time.Time) float64 {
	if info.NumPending == 0 || stream == nil {
		return 0
	}
	msg, err := stream.GetMsg(ctx, info.Delivered.Stream+1)
	if err != nil {
		return 0
	}
	return max(now.Sub(msg.Time).Seconds(), 0)
}
