package profile

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.golden from the current output")

// goldenConstraints are the constraints profiled with each sample.
var goldenConstraints = map[string][]string{
	"mixed.csv": {
		"amount must be non-negative",
		"qty between 1 and 10",
		"flag is required",
		"id must be unique",
		`code matches /^\d+$/`,
		"note must be one of 'first', 'third'",
		"the totals must balance across regions",
	},
	"sales.tsv":    {"units must be positive", "revenue <= 1000", "region in ('north', 'south', 'east', 'west')"},
	"dates.csv":    {"iso_date is required", "iso_datetime greater than 5"},
	"records.json": {"score at least 0", "name must not be null"},
}

// TestGolden profiles every file in testdata/samples (and generated Parquet
// and Excel files) and compares the DataContext and schema text with
// testdata/golden/<file>.golden. Run with -update to accept new output.
func TestGolden(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir("testdata/samples")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	gen := t.TempDir()
	files = append(files, writeParquetSample(t, gen), writeExcelSample(t, gen), writeGzipSample(t, gen))
	slices.Sort(files)
	for _, name := range files {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join("testdata/samples", name)
			if _, err := os.Stat(p); err != nil {
				p = filepath.Join(gen, name)
			}
			got := goldenOutput(t, name, p)
			golden := filepath.Join("testdata/golden", name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGolden -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s mismatch (-want +got):\n%s", golden, diff)
			}
		})
	}
}

func goldenOutput(t *testing.T, name, path string) string {
	t.Helper()
	base := strings.TrimSuffix(name, filepath.Ext(name))
	if strings.HasSuffix(name, ".gz") {
		base = strings.TrimSuffix(base, filepath.Ext(base))
	}
	s := Sample{Name: base, FileName: name, Path: path}
	opts := Options{MaxSampleRows: 5, Seed: 1, Constraints: goldenConstraints[name]}
	rep, err := Profile(context.Background(), []Sample{s}, opts)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	var b strings.Builder
	b.WriteString(rep.DataContext())
	schemas := rep.PanderaSchemas()
	if src, ok := schemas[base]; ok {
		b.WriteString("\n=== pandera schema ===\n")
		b.WriteString(src)
	}
	return b.String()
}
