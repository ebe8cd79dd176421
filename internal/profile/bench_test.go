package profile

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// pandasScript times pandas.read_csv plus describe(include="all") inside
// Python (interpreter start and import excluded) and prints the wall and
// CPU seconds and the peak RSS in KiB.
const pandasScript = `
import resource, sys, time
import pandas as pd
p = sys.argv[1]
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
t0, c0 = time.perf_counter(), cpu()
df = pd.read_csv(p)
df.describe(include="all")
dt, dc = time.perf_counter() - t0, cpu() - c0
print(dt, dc, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
`

// BenchmarkProfileCSV profiles a generated CSV of about 100 MB (override
// with AUTOCODER_BENCH_CSV_MB) end to end, with the row cap above the row
// count so the whole file is read, as pandas reads it. The "pandas"
// sub-benchmark runs Debian's python3-pandas (read_csv + describe) on the
// same file in the same run; the parent logs the throughput ratio.
//
//	go test -run '^$' -bench BenchmarkProfileCSV -benchtime 3x ./internal/profile/
func BenchmarkProfileCSV(b *testing.B) {
	mb := 100
	if s := os.Getenv("AUTOCODER_BENCH_CSV_MB"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			mb = n
		}
	}
	path, rows := writeLargeCSV(b, b.TempDir(), int64(mb)<<20)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	size := st.Size()
	var goMBps, pandasMBps float64

	b.Run("go", func(b *testing.B) {
		b.SetBytes(size)
		peak := startHeapSampler()
		var elapsed time.Duration
		cpu0 := cpuSeconds()
		for b.Loop() {
			start := time.Now()
			rep, err := Profile(context.Background(), []Sample{{Name: "large", FileName: "large.csv", Path: path}},
				Options{MaxScanRows: rows + 1})
			if err != nil {
				b.Fatal(err)
			}
			elapsed += time.Since(start)
			if got := rep.Samples[0].Rows; got != rows {
				b.Fatalf("rows = %d, want %d", got, rows)
			}
		}
		cpu := cpuSeconds() - cpu0
		b.ReportMetric(float64(peak())/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(size)*float64(b.N)/cpu/1e6, "MB/cpu-s")
		goMBps = float64(size) * float64(b.N) / elapsed.Seconds() / 1e6
	})

	b.Run("pandas", func(b *testing.B) {
		python := "/usr/bin/python3"
		if out, err := exec.Command(python, "-c", "import pandas").CombinedOutput(); err != nil {
			b.Fatalf("python3-pandas is needed for the comparison (apt-get install -y python3-pandas): %v: %s", err, out)
		}
		var secs, cpu float64
		var rss int64
		for b.Loop() {
			out, err := exec.Command(python, "-c", pandasScript, path).Output()
			if err != nil {
				b.Fatalf("pandas: %v", err)
			}
			f := strings.Fields(string(out))
			if len(f) != 3 {
				b.Fatalf("pandas printed %q", out)
			}
			dt, _ := strconv.ParseFloat(f[0], 64)
			dc, _ := strconv.ParseFloat(f[1], 64)
			kib, _ := strconv.ParseInt(f[2], 10, 64)
			secs += dt
			cpu += dc
			rss = max(rss, kib)
		}
		pandasMBps = float64(size) * float64(b.N) / secs / 1e6
		b.ReportMetric(pandasMBps, "MB/s")
		b.ReportMetric(float64(size)*float64(b.N)/cpu/1e6, "MB/cpu-s")
		b.ReportMetric(float64(rss)/1024, "peak-rss-MiB")
	})
	if goMBps > 0 && pandasMBps > 0 {
		b.Logf("%d MiB, %d rows: Go profile %.1f MB/s, pandas read_csv+describe %.1f MB/s, ratio %.2f",
			mb, rows, goMBps, pandasMBps, goMBps/pandasMBps)
	}
}

// cpuSeconds is the process's user and system CPU time so far. MB per CPU
// second is the steadier figure on a shared machine, where wall-clock
// throughput depends on the neighbours.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// startHeapSampler samples HeapInuse every 25 ms until the
// returned function is called, which returns the peak seen.
func startHeapSampler() (stop func() uint64) {
	var (
		mu   sync.Mutex
		peak uint64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		mu.Lock()
		peak = max(peak, ms.HeapInuse)
		mu.Unlock()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(25 * time.Millisecond) // ReadMemStats stops the world: not too often
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				sample()
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		sample()
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}
