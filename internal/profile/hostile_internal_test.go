package profile

import (
	"archive/zip"
	"context"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// TestParquetDecimalScaleIsChecked: a Parquet file's decimal scale is
// what the file says, and the reader does not check it; one past any
// decimal's (or over its precision) is refused when the columns are read,
// where a scale of 2^31-1 made decimalText build its string for ever.
func TestParquetDecimalScaleIsChecked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		scale, precision int
		ok               bool
	}{
		{2, 9, true},
		{2147483647, 9, false},
		{10, 9, false},
	} {
		schema := parquet.NewSchema("x", parquet.Group{"d": parquet.Decimal(tc.scale, tc.precision, parquet.Int32Type)})
		_, _, err := parquetColumns(schema)
		if (err == nil) != tc.ok {
			t.Errorf("scale %d, precision %d: err %v, want ok %v", tc.scale, tc.precision, err, tc.ok)
		}
	}
	for _, tc := range []struct {
		n     int64
		scale int32
		want  string
	}{
		{12345, 2, "123.45"}, {5, 3, "0.005"}, {-5, 3, "-0.005"}, {0, 2, "0.00"}, {7, 0, "7"},
	} {
		if got := decimalText(big.NewInt(tc.n), tc.scale); got != tc.want {
			t.Errorf("decimalText(%d, %d) = %q, want %q", tc.n, tc.scale, got, tc.want)
		}
	}
}

// TestXLSXBombIsRefused: an .xlsx is a zip, and a part of a few MiB can
// unpack to gigabytes, which excelize would read into the sandbox-worker's
// memory under its own default limit (about 16 GiB). A workbook whose
// parts unpack past 1 GiB is refused instead.
func TestXLSXBombIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, writeExcelSample(t, dir))
	zr, err := zip.OpenReader(good)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	bomb := filepath.Join(dir, "bomb.xlsx")
	out, err := os.Create(bomb)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(out)
	for _, f := range zr.File {
		w, err := zw.CreateHeader(&f.FileHeader)
		if err != nil {
			t.Fatal(err)
		}
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, r); err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	w, err := zw.Create("xl/junk.xml")
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for range xlsxUnzipLimit>>20 + 64 {
		if _, err := w.Write(zeros); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = Profile(t.Context(), []Sample{{Name: "orders", FileName: "orders.xlsx", Path: bomb}}, Options{})
	if err == nil {
		t.Fatal("a workbook unpacking past the limit was profiled")
	}
	if _, err := Profile(t.Context(), []Sample{{Name: "orders", FileName: "orders.xlsx", Path: good}}, Options{}); err != nil {
		t.Errorf("the workbook without the bomb: %v", err)
	}
}

// TestLongTextLineIsNotHeld: a text file of one long line (64 MiB here,
// 2 GiB in the finding) is profiled without holding the line: only its
// first 300 characters are shown, and only those are kept. Not parallel:
// it measures the process's allocations.
func TestLongTextLineIsNotHeld(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = 'a'
	}
	for range 64 {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rep, err := Profile(t.Context(), []Sample{{Name: "notes", FileName: "notes.txt", Path: path}}, Options{})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	sp := rep.Samples[0]
	if len(sp.FirstLines) != 1 || !strings.HasPrefix(sp.FirstLines[0], strings.Repeat("a", 300)) || len([]rune(sp.FirstLines[0])) > 301 {
		t.Fatalf("format %s, lines %d, scanned %d, truncated %v, first lines %q, notes %q: want the line's first 300 characters", sp.Format, sp.Lines, sp.ScannedBytes, sp.Truncated, sp.FirstLines, sp.Notes)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("profiling a 64 MiB line allocated %d MiB: the line was held", alloc>>20)
	}
}

// TestWideHeaders: a header of 200k repeated names is renamed as pandas
// does in linear time (the renaming once counted each suffix up from 1:
// quadratic, a hang); a header past MaxColumns profiles its first
// MaxColumns columns, says so, and does not call its rows ragged.
func TestWideHeaders(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, header, row string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(header+"\n"+row+"\n"+row+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const dups = 200_000
	repeated := write("repeated.csv", strings.Repeat("a,", dups-1)+"a", strings.Repeat("1,", dups-1)+"1")
	names := make([]string, MaxColumns+5000)
	for i := range names {
		names[i] = "c" + strconv.Itoa(i)
	}
	wide := write("wide.csv", strings.Join(names, ","), strings.Repeat("1,", len(names)-1)+"1")

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // a deadline for a hang, not a speed
	defer cancel()
	rep, err := Profile(ctx, []Sample{{Name: "repeated", FileName: "repeated.csv", Path: repeated}, {Name: "wide", FileName: "wide.csv", Path: wide}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rs, ws := rep.Samples[0], rep.Samples[1]
	if len(rs.Columns) != MaxColumns || rs.Columns[1].Name != "a.1" {
		t.Errorf("repeated header: %d columns, second %q; want %d, a.1", len(rs.Columns), rs.Columns[1].Name, MaxColumns)
	}
	if len(ws.Columns) != MaxColumns || ws.RaggedLong != 0 || !strings.Contains(strings.Join(ws.Notes, "\n"), "the first 10000 are profiled") {
		t.Errorf("wide header: %d columns, %d ragged rows, notes %q", len(ws.Columns), ws.RaggedLong, ws.Notes)
	}
}
