package metrics

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/pkg/cache"
)

// Cache layers: the store a stage cache lookup went to.
const (
	LayerRedis = "redis" // the fleet's shared Redis
	LayerLocal = "local" // a directory in the worker's state dir
)

// observedCache counts the lookups of a cache.Cache by result.
type observedCache struct {
	cache.Cache
	hit, miss, failed prometheus.Counter
}

var _ cache.Cache = (*observedCache)(nil)

// ObserveCache returns c with its Get calls counted in CacheLookupsTotal
// under layer, by result (hit, miss, error). Give it only to the user whose
// lookups should be counted (the stage cache), not to lock and heartbeat
// users of the same store.
func ObserveCache(c cache.Cache, layer string, reg prometheus.Registerer) (cache.Cache, error) {
	lookups, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: CacheLookupsTotal,
		Help: "Stage cache lookups, by layer (redis or local) and result (hit, miss, error)."}, []string{"layer", "result"}))
	if err != nil {
		return nil, fmt.Errorf("metrics: register %s: %w", CacheLookupsTotal, err)
	}
	return &observedCache{Cache: c, hit: lookups.WithLabelValues(layer, "hit"),
		miss: lookups.WithLabelValues(layer, "miss"), failed: lookups.WithLabelValues(layer, "error")}, nil
}

// Get implements cache.Cache, counting the lookup.
func (o *observedCache) Get(ctx context.Context, key string) ([]byte, error) {
	b, err := o.Cache.Get(ctx, key)
	switch {
	case err == nil:
		o.hit.Inc()
	case errors.Is(err, cache.ErrMiss):
		o.miss.Inc()
	default:
		o.failed.Inc()
	}
	return b, err
}
