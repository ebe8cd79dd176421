package profile

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/xuri/excelize/v2"
)

// capRow is a row of the row-cap samples: id counts from 1 in file order.
type capRow struct {
	ID    int64  `parquet:"id" json:"id"`
	Label string `parquet:"label" json:"label"`
}

func capRows(n int) []capRow {
	rows := make([]capRow, n)
	for i := range rows {
		rows[i] = capRow{ID: int64(i + 1), Label: "row " + strconv.Itoa(i+1)}
	}
	return rows
}

// writeCapSample writes n rows in the format its name's extension says.
func writeCapSample(t *testing.T, path string, n int) {
	t.Helper()
	rows := capRows(n)
	var body []byte
	switch filepath.Ext(path) {
	case ".csv":
		var b strings.Builder
		b.WriteString("id,label\n")
		for _, r := range rows {
			b.WriteString(strconv.FormatInt(r.ID, 10) + "," + r.Label + "\n")
		}
		body = []byte(b.String())
	case ".json":
		var err error
		if body, err = json.Marshal(rows); err != nil {
			t.Fatal(err)
		}
	case ".jsonl":
		var b strings.Builder
		for _, r := range rows {
			line, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(line)
			b.WriteByte('\n')
		}
		body = []byte(b.String())
	case ".parquet":
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := parquet.Write(f, rows); err != nil {
			t.Fatal(err)
		}
		return
	case ".xlsx":
		f := excelize.NewFile()
		defer f.Close()
		sw, err := f.NewStreamWriter("Sheet1")
		if err != nil {
			t.Fatal(err)
		}
		if err := sw.SetRow("A1", []any{"id", "label"}); err != nil {
			t.Fatal(err)
		}
		for i, r := range rows {
			cell, _ := excelize.CoordinatesToCellName(1, i+2)
			if err := sw.SetRow(cell, []any{r.ID, r.Label}); err != nil {
				t.Fatal(err)
			}
		}
		if err := sw.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := f.SaveAs(path); err != nil {
			t.Fatal(err)
		}
		return
	default:
		t.Fatalf("no writer for %s", path)
	}
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRowCapEveryFormat: MaxScanRows holds for every tabular format, not
// just CSV: the statistics and the representative rows cover the first
// rows only, the report says the file continues exactly when it does, and
// a file of exactly the cap is read whole.
func TestRowCapEveryFormat(t *testing.T) {
	t.Parallel()
	const limit = 10
	for _, ext := range []string{".csv", ".json", ".jsonl", ".parquet", ".xlsx"} {
		for _, tc := range []struct {
			rows          int
			wantRows      int
			wantTruncated bool
		}{
			{rows: 500, wantRows: limit, wantTruncated: true},
			{rows: limit + 1, wantRows: limit, wantTruncated: true},
			{rows: limit, wantRows: limit, wantTruncated: false},
			{rows: limit - 3, wantRows: limit - 3, wantTruncated: false},
		} {
			name := "cap" + ext
			t.Run(strconv.Itoa(tc.rows)+" rows "+ext, func(t *testing.T) {
				t.Parallel()
				path := filepath.Join(t.TempDir(), name)
				writeCapSample(t, path, tc.rows)
				rep, err := Profile(context.Background(), []Sample{{Name: "cap", FileName: name, Path: path}},
					Options{MaxScanRows: limit, MaxSampleRows: 5, Seed: 3})
				if err != nil {
					t.Fatal(err)
				}
				sp := rep.Samples[0]
				if !sp.Format.Tabular() {
					t.Fatalf("format %s, want a table", sp.Format)
				}
				if sp.Rows != tc.wantRows || sp.Truncated != tc.wantTruncated {
					t.Fatalf("rows %d, truncated %v; want %d and %v", sp.Rows, sp.Truncated, tc.wantRows, tc.wantTruncated)
				}
				var id *ColumnProfile
				for i := range sp.Columns {
					if sp.Columns[i].Name == "id" {
						id = sp.Columns[i]
					}
				}
				if id == nil || id.Num == nil {
					t.Fatalf("no numeric id column: %+v", sp.Columns)
				}
				if id.Count != tc.wantRows || id.Num.Min != 1 || id.Num.Max != float64(tc.wantRows) {
					t.Errorf("id: %d values, min %v, max %v; want %d values from 1 to %d", id.Count, id.Num.Min, id.Num.Max, tc.wantRows, tc.wantRows)
				}
				if len(sp.SampleRows) != min(5, tc.wantRows) {
					t.Errorf("%d representative rows, want %d", len(sp.SampleRows), min(5, tc.wantRows))
				}
				idAt := -1
				for i, c := range sp.Columns {
					if c.Name == "id" {
						idAt = i
					}
				}
				for _, r := range sp.SampleRows {
					if n, err := strconv.Atoi(r[idAt]); err != nil || n < 1 || n > tc.wantRows {
						t.Errorf("representative row %q is past the cap", r)
					}
				}
				extent := "(the whole file)"
				if tc.wantTruncated {
					extent = "(the file continues)"
				}
				if want := "rows: " + strconv.Itoa(tc.wantRows) + " scanned " + extent; !strings.Contains(rep.DataContext(), want) {
					t.Errorf("data context lacks %q:\n%s", want, rep.DataContext())
				}
				if tc.wantTruncated && !strings.Contains(rep.PanderaSchemas()["cap"], "inferred from the first "+strconv.Itoa(limit)+" rows") {
					t.Errorf("schema does not say it covers the first rows:\n%s", rep.PanderaSchemas()["cap"])
				}
			})
		}
	}
}
