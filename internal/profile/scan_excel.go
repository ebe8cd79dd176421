package profile

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/xuri/excelize/v2"
)

// Bounds of an .xlsx unpacked: the whole, and each part read into memory
// (larger worksheets go to temporary files).
const (
	xlsxUnzipLimit = 1 << 30
	xlsxXMLLimit   = 16 << 20
)

// scanExcel reads the first sheet (pandas.read_excel's default) with two
// excelize row iterators in step, one giving stored values and one giving
// displayed text: a cell is read as pandas would (numbers as stored, dates
// as dates), which neither iterator alone tells. Styles would, but reading
// them loads the whole sheet.
func (sc *scanner) scanExcel() (err error) {
	defer func() { // as scanParquet: a malformed file is the sample's error
		if r := recover(); r != nil {
			err = fmt.Errorf("xlsx: the file is malformed (the reader failed: %v)", r)
		}
	}()
	sp := sc.sp
	sp.Format, sp.Encoding = FormatExcel, ""
	// An .xlsx is a zip: excelize reads every part but the worksheets into
	// memory, up to its own default of about 16 GiB unpacked. A few MiB
	// can unpack to that (a zip bomb), in the sandbox-worker's process.
	f, err := excelize.OpenFile(sc.file.Name(), excelize.Options{UnzipSizeLimit: xlsxUnzipLimit, UnzipXMLSizeLimit: xlsxXMLLimit})
	if err != nil {
		return fmt.Errorf("xlsx: %w", err)
	}
	defer f.Close()
	sp.Sheets = f.GetSheetList()
	if len(sp.Sheets) == 0 {
		sp.Format = FormatEmpty
		sp.Notes = append(sp.Notes, "the workbook has no sheets")
		return nil
	}
	sp.Sheet = sp.Sheets[0]
	if len(sp.Sheets) > 1 {
		sp.Notes = append(sp.Notes, fmt.Sprintf("the workbook has %d sheets (%s); the first is profiled, as pandas.read_excel reads by default", len(sp.Sheets), quoteJoin(sp.Sheets)))
	}
	rows, err := f.Rows(sp.Sheet)
	if err != nil {
		return fmt.Errorf("xlsx sheet %q: %w", sp.Sheet, err)
	}
	defer rows.Close()
	raws, err := f.Rows(sp.Sheet)
	if err != nil {
		return fmt.Errorf("xlsx sheet %q: %w", sp.Sheet, err)
	}
	defer raws.Close()
	var t *table
	truncated := false
	for rows.Next() && raws.Next() {
		rec, err := excelRecord(rows, raws)
		if err != nil {
			return fmt.Errorf("xlsx sheet %q: %w", sp.Sheet, err)
		}
		if t == nil {
			if len(rec) == 0 {
				continue // leading blank rows: pandas skips them too
			}
			t = sc.newTable(rec)
			continue
		}
		if t.full() {
			truncated = true
			break
		}
		if t.rows%ctxCheckRows == 0 {
			if err := sc.ctx.Err(); err != nil {
				return err
			}
		}
		t.excelRow(rec)
	}
	if err := rows.Error(); err != nil {
		return fmt.Errorf("xlsx sheet %q: %w", sp.Sheet, err)
	}
	if t == nil {
		sp.Format = FormatEmpty
		sp.Notes = append(sp.Notes, fmt.Sprintf("sheet %q is empty", sp.Sheet))
		return nil
	}
	sc.raw.n = sp.SizeBytes
	t.finish(truncated)
	return nil
}

// excelRecord reads the current row of a sheet from its two readers, rows
// (cells as formatted) and raws (raw cell values), each cell as excelCell
// chooses.
func excelRecord(rows, raws *excelize.Rows) ([]string, error) {
	rec, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	raw, err := raws.Columns(excelize.Options{RawCellValue: true})
	if err != nil {
		return nil, err
	}
	for i := range rec {
		if i < len(raw) {
			rec[i] = excelCell(raw[i], rec[i])
		}
	}
	return rec, nil
}

// excelRow adds a row below the header, widening the table for cells
// right of it and filling in trailing empty cells.
func (t *table) excelRow(rec []string) {
	if len(rec) > len(t.cols) {
		// Cells right of the header: pandas names them "Unnamed: n".
		for i := len(t.cols); i < len(rec); i++ {
			if t.addColumn(fmt.Sprintf("Unnamed: %d", i)) < 0 {
				break
			}
		}
		rec = rec[:min(len(rec), len(t.cols))]
	}
	for len(rec) < len(t.cols) {
		rec = append(rec, "") // trailing empty cells are left out of a row
	}
	t.textRow(rec)
}

// excelCell chooses between a cell's stored and displayed text: booleans
// as displayed (TRUE), date-formatted serial numbers as ISO dates, other
// numbers as stored (full precision, no thousands separators), text as is.
func excelCell(raw, shown string) string {
	if raw == shown || shown == "TRUE" || shown == "FALSE" {
		return shown
	}
	serial, err := strconv.ParseFloat(raw, 64)
	if err != nil {
		return shown
	}
	if !looksLikeDateDisplay(shown) || serial < 0 {
		return raw
	}
	t, err := excelize.ExcelDateToTime(serial, false)
	if err != nil {
		return raw
	}
	switch {
	case serial < 1:
		return t.Format("15:04:05") // a time of day alone
	case t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0:
		return t.Format("2006-01-02")
	}
	return t.Format("2006-01-02 15:04:05")
}

// looksLikeDateDisplay: a number shown with date or time separators or a
// month name ("01-15-24", "1/15/2024", "10:30", "15-Jan-24").
func looksLikeDateDisplay(s string) bool {
	if s == "" {
		return false
	}
	return strings.ContainsAny(s[1:], "/-:") || strings.ContainsFunc(s, func(r rune) bool {
		return r < 0x80 && isLetter(byte(r)) && r != 'E' && r != 'e'
	}) && !strings.ContainsAny(s, "%$€£")
}

func quoteJoin(v []string) string {
	q := make([]string, len(v))
	for i, s := range v {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
