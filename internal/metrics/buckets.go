package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// StageBuckets are the histogram buckets, in seconds, of anything that may
// take as long as one stage: from a cache hit (milliseconds) to the longest
// stage a job can ask for, a sandbox run of options.timeout's ceiling
// (messages.MaxTimeout, 1h) plus the coordinator's run slack (30m), with
// room to spare. A test checks that the last bucket still reaches it.
var StageBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600,
	1200, 1800, 2700, 3600, 5400, 7200}

// JobBuckets are the buckets of whole jobs: many stages, up to a day.
var JobBuckets = []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 28800, 86400}

// IterationBuckets are the buckets of a job's iterations (repair rounds).
var IterationBuckets = []float64{1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50}

// register registers c on reg, or returns the collector of the same
// description a previous caller registered there (several parts of one
// process, e.g. submit --local's two stage workers, share a family).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}
