package bus_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/autocoder/autocoder/internal/bus"
)

// BenchmarkStateWriteSync measures what flushing every write costs the
// coordinator's hot path, a compare-and-set of a job's state (4 KiB, a
// job in its first stages), on the file store: sync=2m is nats-server's
// default, sync=always what autocoder runs with (sync.go). "serial" is
// one job's steps, "parallel" many jobs' steps at once, as the
// coordinator's handlers run them. Compare the two in one run
// (BENCHMARKS.md): the ratio, not the times, is the figure.
func BenchmarkStateWriteSync(b *testing.B) {
	for _, policy := range []string{"2m", bus.SyncAlways} {
		for _, parallel := range []bool{false, true} {
			name := fmt.Sprintf("sync=%s/serial", policy)
			if parallel {
				name = fmt.Sprintf("sync=%s/parallel", policy)
			}
			b.Run(name, func(b *testing.B) { benchStateWrites(b, policy, parallel) })
		}
	}
}

func benchStateWrites(b *testing.B, policy string, parallel bool) {
	_, js := newBusWith(b, bus.EmbeddedConfig{StoreDir: b.TempDir(), Sync: policy})
	ctx := context.Background()
	res, err := bus.Provision(ctx, js, bus.ProvisionConfig{})
	if err != nil {
		b.Fatal(err)
	}
	value := []byte(strings.Repeat("s", 4<<10))
	write := func(key string, rev *uint64) {
		var err error
		if *rev == 0 {
			*rev, err = res.JobState.Create(ctx, key, value)
		} else {
			*rev, err = res.JobState.Update(ctx, key, value, *rev)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(value)))
	b.ResetTimer()
	if !parallel {
		var rev uint64
		for range b.N {
			write("job-1", &rev)
		}
		return
	}
	var jobs atomic.Int64
	b.SetParallelism(4) // 8 writers on 2 cores: the coordinator's result handlers
	b.RunParallel(func(pb *testing.PB) {
		key := fmt.Sprintf("job-%d", jobs.Add(1))
		var rev uint64
		for pb.Next() {
			write(key, &rev)
		}
	})
}
