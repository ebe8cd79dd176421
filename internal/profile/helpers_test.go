package profile

import (
	"bufio"
	"compress/gzip"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/parquet-go/parquet-go"
	"github.com/xuri/excelize/v2"
)

type pqRow struct {
	ID     int64     `parquet:"id"`
	Name   *string   `parquet:"name,optional"`
	Price  float64   `parquet:"price"`
	Qty    int32     `parquet:"qty"`
	Active bool      `parquet:"active"`
	At     time.Time `parquet:"at,timestamp(millisecond)"`
	Tags   []string  `parquet:"tags,list"`
}

// writeParquetSample writes a small Parquet file and returns its name.
func writeParquetSample(t testing.TB, dir string) string {
	t.Helper()
	str := func(s string) *string { return &s }
	base := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	rows := []pqRow{
		{ID: 1, Name: str("widget"), Price: 9.99, Qty: 3, Active: true, At: base, Tags: []string{"a", "b"}},
		{ID: 2, Name: nil, Price: 0.1, Qty: 0, Active: false, At: base.Add(90 * time.Minute), Tags: nil},
		{ID: 3, Name: str("gadget"), Price: 1234.5678, Qty: 12, Active: true, At: base.Add(-48 * time.Hour), Tags: []string{"c"}},
		{ID: 4, Name: str("Ünïcode"), Price: 3, Qty: 7, Active: true, At: base.Add(time.Second), Tags: []string{}},
	}
	name := "items.parquet"
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := parquet.Write(f, rows); err != nil {
		t.Fatal(err)
	}
	return name
}

// writeExcelSample writes a two-sheet workbook and returns its name.
func writeExcelSample(t testing.TB, dir string) string {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	sheet := "Orders"
	if err := f.SetSheetName("Sheet1", sheet); err != nil {
		t.Fatal(err)
	}
	dateStyle, err := f.NewStyle(&excelize.Style{NumFmt: 14})
	if err != nil {
		t.Fatal(err)
	}
	rows := [][]any{
		{"order_id", "customer", "amount", "ordered", "paid"},
		{101, "Acme", 250.5, time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC), true},
		{102, "Globex", 99, time.Date(2024, 2, 3, 0, 0, 0, 0, time.UTC), false},
		{103, "", 10.25, time.Date(2024, 2, 28, 0, 0, 0, 0, time.UTC), true},
		{104, "Initech", 1e6, time.Date(2024, 3, 31, 0, 0, 0, 0, time.UTC)},
	}
	for i, r := range rows {
		cell, _ := excelize.CoordinatesToCellName(1, i+1)
		if err := f.SetSheetRow(sheet, cell, &r); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.SetCellStyle(sheet, "D2", "D5", dateStyle); err != nil {
		t.Fatal(err)
	}
	if _, err := f.NewSheet("Notes"); err != nil {
		t.Fatal(err)
	}
	_ = f.SetCellValue("Notes", "A1", "not profiled")
	name := "orders.xlsx"
	if err := f.SaveAs(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	return name
}

// writeGzipSample writes a gzip-compressed CSV and returns its name.
func writeGzipSample(t testing.TB, dir string) string {
	t.Helper()
	name := "compressed.csv.gz"
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := gzip.NewWriter(f)
	zw.ModTime = time.Unix(0, 0) // reproducible bytes, so the golden size holds
	if _, err := zw.Write([]byte("k,v\na,1\nb,2\nc,3\n")); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return name
}

// writeLargeCSV writes a deterministic sales-like CSV of about size bytes
// and returns its path and row count. Streaming: memory stays small.
func writeLargeCSV(tb testing.TB, dir string, size int64) (string, int) {
	tb.Helper()
	p := filepath.Join(dir, "large.csv")
	f, err := os.Create(p)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	regions := []string{"north", "south", "east", "west", "central"}
	notes := []string{"", "rush", "gift, wrapped", `said "thanks"`, "repeat customer", "ünïcödé"}
	rng := rand.New(rand.NewPCG(42, 7))
	w.WriteString("order_id,region,product,quantity,unit_price,discount,order_date,shipped_at,paid,note\n")
	var written int64
	rows := 0
	buf := make([]byte, 0, 256)
	day0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for written < size {
		rows++
		d := day0.Add(time.Duration(rng.IntN(1500)) * 24 * time.Hour)
		buf = buf[:0]
		buf = strconv.AppendInt(buf, int64(rows), 10)
		buf = append(buf, ',')
		buf = append(buf, regions[rng.IntN(len(regions))]...)
		buf = append(buf, ",P"...)
		buf = strconv.AppendInt(buf, int64(rng.IntN(5000)), 10)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, int64(1+rng.IntN(100)), 10)
		buf = append(buf, ',')
		buf = strconv.AppendFloat(buf, float64(rng.IntN(1_000_000))/100, 'f', -1, 64)
		buf = append(buf, ',')
		if rng.IntN(10) > 0 {
			buf = strconv.AppendFloat(buf, float64(rng.IntN(50))/100, 'f', -1, 64)
		}
		buf = append(buf, ',')
		buf = d.AppendFormat(buf, "2006-01-02")
		buf = append(buf, ',')
		buf = d.Add(time.Duration(rng.IntN(86400*3))*time.Second).AppendFormat(buf, time.RFC3339)
		buf = append(buf, ',')
		buf = strconv.AppendBool(buf, rng.IntN(4) > 0)
		buf = append(buf, ',')
		note := notes[rng.IntN(len(notes))]
		if strings.ContainsAny(note, ",\"") {
			note = `"` + strings.ReplaceAll(note, `"`, `""`) + `"`
		}
		buf = append(buf, note...)
		buf = append(buf, '\n')
		n, err := w.Write(buf)
		if err != nil {
			tb.Fatal(err)
		}
		written += int64(n)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	return p, rows
}

func itoa(i int) string { return strconv.Itoa(i) }

func xxhashString(s string) uint64 { return xxhash.Sum64String(s) }

func timeParse(layout, s string) (time.Time, error) {
	if strings.HasSuffix(s, " UTC") {
		s = strings.TrimSuffix(s, " UTC") + "Z"
	}
	return time.Parse(layout, s)
}
