package profile

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
)

// ctxCheckRows is how often (in rows) a scan looks at ctx.
const ctxCheckRows = 1 << 13

// firstLinesShown is how many lines the plain-text fallback keeps.
const firstLinesShown = 20

// scanCSV reads delimited text with encoding/csv: quoted fields may hold
// delimiters and newlines; stray quotes are kept (LazyQuotes) and rows may
// be ragged, as real exports are.
func (sc *scanner) scanCSV(delim rune) error {
	sp := sc.sp
	sp.Format, sp.Delimiter = FormatCSV, delim
	if delim == '\t' {
		sp.Format = FormatTSV
	}
	r := csv.NewReader(sc.limit)
	r.Comma = delim
	r.LazyQuotes = true
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		sp.Format = FormatEmpty
		sp.Notes = append(sp.Notes, "the file has no rows")
		return nil
	}
	if err != nil {
		return fmt.Errorf("read header: %w", err)
	}
	t := sc.newTable(slices.Clone(header))
	truncated := false
	for {
		if t.full() {
			sc.limit.reset()
			_, err := r.Read()
			truncated = err == nil
			break
		}
		if t.rows%ctxCheckRows == 0 {
			if err := sc.ctx.Err(); err != nil {
				return err
			}
		}
		sc.limit.reset()
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("row %d: %w", t.rows+1, err)
		}
		t.textRow(rec)
	}
	t.finish(truncated)
	if t.rows == 0 {
		sp.Notes = append(sp.Notes, fmt.Sprintf("header only: %d columns, no data rows", len(t.cols)))
	}
	return nil
}

// scanText is the fallback for anything that is text but not a table: line
// count (within the byte cap) and the first lines.
func (sc *scanner) scanText() error {
	sp := sc.sp
	sp.Format = FormatText
	br := bufio.NewReaderSize(sc.limit, 64<<10)
	var line []byte
	for {
		if sc.raw.n >= sc.opts.MaxScanBytes {
			sp.Truncated = true
			sp.Notes = append(sp.Notes, fmt.Sprintf("lines counted in the first %s of %s", sizeText(sc.raw.n), sizeText(sp.SizeBytes)))
			break
		}
		sc.limit.reset() // a text line may be any length: only the byte cap applies
		chunk, err := br.ReadSlice('\n')
		if len(sp.FirstLines) < firstLinesShown {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // a long line: keep reading it
		}
		if len(chunk) > 0 {
			sp.Lines++
			if len(sp.FirstLines) < firstLinesShown {
				sp.FirstLines = append(sp.FirstLines, truncateRunes(trimEOL(string(line)), 300))
			}
			line = line[:0]
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return err
		}
		if sp.Lines%ctxCheckRows == 0 {
			if err := sc.ctx.Err(); err != nil {
				return err
			}
		}
	}
	sp.ScannedBytes = sc.raw.n
	return nil
}

func trimEOL(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	return s
}
