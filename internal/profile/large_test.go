package profile

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestLargeCSVBoundedMemory profiles a generated 1 GiB CSV (8 MB with
// -short; AUTOCODER_LARGE_CSV_MB sets another size) under a row
// cap below its row count, and checks that the statistics stop at the cap,
// say so, and that the heap stays far below the file's size: the file is
// streamed, never loaded.
//
// Not parallel: the heap is sampled for this test alone.
func TestLargeCSVBoundedMemory(t *testing.T) {
	size := int64(1 << 30)
	if testing.Short() {
		size = 8 << 20
	}
	if s := os.Getenv("AUTOCODER_LARGE_CSV_MB"); s != "" {
		mb, err := strconv.Atoi(s)
		if err != nil || mb <= 0 {
			t.Fatalf("AUTOCODER_LARGE_CSV_MB=%q: want a number of MiB", s)
		}
		size = int64(mb) << 20
	}
	path, rows := writeLargeCSV(t, t.TempDir(), size)
	limit := min(rows/4, DefaultMaxScanRows)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	peak := startHeapSampler()
	rep, err := Profile(context.Background(), []Sample{{Name: "large", FileName: "large.csv", Path: path}},
		Options{MaxScanRows: limit, MaxSampleRows: 20, Seed: 7}) // at 1 GB, the default cap
	top := peak()
	if err != nil {
		t.Fatal(err)
	}
	sp := rep.Samples[0]
	if sp.Rows != limit || !sp.Truncated {
		t.Fatalf("rows = %d truncated = %v, want %d and true (file has %d rows)", sp.Rows, sp.Truncated, limit, rows)
	}
	ctx := rep.DataContext()
	if want := fmt.Sprintf("statistics cover the first %d rows", limit); !strings.Contains(ctx, want) {
		t.Errorf("DataContext lacks %q:\n%s", want, ctx)
	}
	if !strings.Contains(ctx, "(the file continues)") {
		t.Errorf("DataContext does not say the file continues:\n%s", ctx)
	}
	if len(sp.SampleRows) != 20 {
		t.Errorf("sample rows = %d, want 20", len(sp.SampleRows))
	}
	// What the profile may hold: per scanned row a row hash, an id hash and
	// four numeric values (8 bytes each), with room for slice growth and
	// uncollected garbage, plus fixed overheads; not the file.
	grown := int64(top) - int64(before.HeapInuse)
	bound := int64(limit)*8*6*5/2 + 32<<20
	t.Logf("file %d MiB, %d rows, scanned %d; heap grew by at most %.1f MiB (bound %.1f MiB)",
		size>>20, rows, limit, float64(grown)/(1<<20), float64(bound)/(1<<20))
	if grown > bound {
		t.Errorf("heap grew by %d bytes profiling %d rows, over the bound %d", grown, limit, bound)
	}
	if !testing.Short() && grown > size/2 {
		t.Errorf("heap grew by %d bytes for a %d-byte file: not streaming", grown, size)
	}

	// The byte cap stops the scan too.
	rep, err = Profile(context.Background(), []Sample{{Name: "large", FileName: "large.csv", Path: path}},
		Options{MaxScanBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if sp := rep.Samples[0]; !sp.Truncated || sp.ScannedBytes > 2<<20 || sp.Rows == 0 {
		t.Errorf("byte cap: truncated = %v, scanned %d bytes, %d rows", sp.Truncated, sp.ScannedBytes, sp.Rows)
	}
}

// TestDeterministic: profiling the same file twice, or with a different
// GOMAXPROCS, gives identical text; another seed picks other rows.
func TestDeterministic(t *testing.T) {
	t.Parallel()
	path, _ := writeLargeCSV(t, t.TempDir(), 4<<20)
	run := func(seed uint64) (string, string) {
		rep, err := Profile(context.Background(), []Sample{{Name: "s", FileName: "s.csv", Path: path}},
			Options{MaxSampleRows: 10, Seed: seed, MaxScanRows: 30_000, Constraints: []string{"quantity must be positive"}})
		if err != nil {
			t.Fatal(err)
		}
		return rep.DataContext(), rep.PanderaSchemas()["s"]
	}
	ctx1, schema1 := run(1)
	ctx2, schema2 := run(1)
	if ctx1 != ctx2 || schema1 != schema2 {
		t.Fatalf("two runs differ:\n%s\n---\n%s", ctx1, ctx2)
	}
	ctx3, _ := run(2)
	if ctx1 == ctx3 {
		t.Error("seeds 1 and 2 chose the same representative rows")
	}
	for _, want := range []string{"about ", "(estimate)", "median", "representative rows (10 of 30000"} {
		if !strings.Contains(ctx1, want) {
			t.Errorf("DataContext lacks %q", want)
		}
	}
	_ = os.Remove(path)
}
