package profile

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
)

// parquetRowBatch is how many rows are read from a row group at a time.
const parquetRowBatch = 256

// pqColumn is how one Parquet leaf column's values become profile values.
type pqColumn struct {
	kind     parquet.Kind
	logical  any // the *format.XxxType of the logical annotation, or nil
	conv     deprecated.ConvertedType
	hasConv  bool
	repeated bool
	scale    int32 // decimals
}

// scanParquet reads rows group by group with parquet-go's generic row
// reader (pages are decoded as needed, not the whole file).
func (sc *scanner) scanParquet() (err error) {
	// The reader trusts the file's metadata, and panics on some that lie
	// (a fixed-length decimal of no length): a malformed file is the
	// sample's error, not a worker's panic, which is retried as if the
	// next try could read it.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("parquet: the file is malformed (the reader failed: %v)", r)
		}
	}()
	sp := sc.sp
	sp.Format, sp.Encoding = FormatParquet, ""
	pf, err := parquet.OpenFile(sc.file, sp.SizeBytes)
	if err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	names, cols, err := parquetColumns(pf.Schema())
	if err != nil {
		return err
	}
	t := sc.newTable(names)
	total := pf.NumRows()
	pr := &pqRows{t: t, cols: cols, lists: make([][]string, len(cols)), gen: make([]int, len(cols))}
	buf := make([]parquet.Row, parquetRowBatch)
	truncated := false
	for _, rg := range pf.RowGroups() {
		if truncated, err = sc.readRowGroup(rg, pr, buf); err != nil {
			return err
		}
		if truncated {
			break
		}
	}
	sc.raw.n = sp.SizeBytes
	if total > 0 && truncated {
		sc.raw.n = int64(float64(sp.SizeBytes) * float64(t.rows) / float64(total))
	}
	t.finish(truncated)
	if truncated {
		sp.Notes = append(sp.Notes, fmt.Sprintf("the file has %d rows in all", total))
	}
	return nil
}

// parquetColumns names the schema's leaf columns as pandas does and says
// how to read each.
func parquetColumns(schema *parquet.Schema) ([]string, []pqColumn, error) {
	paths := schema.Columns()
	names := make([]string, len(paths))
	cols := make([]pqColumn, len(paths))
	for i, p := range paths {
		names[i] = parquetName(p)
		leaf, ok := schema.Lookup(p...)
		if !ok {
			return nil, nil, fmt.Errorf("parquet: column %s not in schema", names[i])
		}
		typ := leaf.Node.Type()
		c := pqColumn{kind: typ.Kind(), repeated: leaf.MaxRepetitionLevel > 0}
		if lt := typ.LogicalType(); lt != nil {
			c.logical = lt.Value
			if d, ok := lt.Value.(*format.DecimalType); ok {
				// Checked here: the file says it, and the reader does
				// not check it (a scale of 2^31-1 made decimalText loop).
				if d.Scale < 0 || d.Scale > maxDecimalScale || d.Precision > 0 && d.Scale > d.Precision {
					return nil, nil, fmt.Errorf("parquet: column %s: a decimal of scale %d and precision %d", names[i], d.Scale, d.Precision)
				}
				c.scale = d.Scale
			}
		}
		if ct := typ.ConvertedType(); ct != nil {
			c.conv, c.hasConv = *ct, true
		}
		cols[i] = c
	}
	return names, cols, nil
}

// readRowGroup feeds one row group's rows to the table, a batch at a time,
// until the group ends or the table is full (truncated).
func (sc *scanner) readRowGroup(rg parquet.RowGroup, pr *pqRows, buf []parquet.Row) (truncated bool, err error) {
	rows := rg.Rows()
	defer rows.Close()
	for {
		n, err := rows.ReadRows(buf)
		for _, row := range buf[:n] {
			if pr.t.full() {
				return true, nil
			}
			if pr.t.rows%ctxCheckRows == 0 {
				if err := sc.ctx.Err(); err != nil {
					return false, err
				}
			}
			pr.add(row)
		}
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("parquet: %w", err)
		}
	}
}

// pqRows turns parquet-go's rows, flat lists of leaf values, into table
// rows: a repeated leaf's values are gathered into one list cell, and a
// column without a value in a row is null there.
type pqRows struct {
	t     *table
	cols  []pqColumn
	lists [][]string // each repeated column's values in the current row
	gen   []int      // the row each column last had a value in
	g     int        // the current row's number
}

// add feeds one row to the table.
func (p *pqRows) add(row parquet.Row) {
	t, cols := p.t, p.cols
	p.g++
	g := p.g
	for _, v := range row {
		ci := v.Column()
		if ci < 0 || ci >= len(cols) {
			continue
		}
		if cols[ci].repeated {
			if p.gen[ci] != g {
				p.gen[ci], p.lists[ci] = g, p.lists[ci][:0]
			}
			if !v.IsNull() {
				p.lists[ci] = append(p.lists[ci], cols[ci].text(v))
			}
			continue
		}
		p.gen[ci] = g
		t.cells[ci] = cols[ci].add(t.cols[ci], v)
	}
	for ci := range cols {
		switch {
		case p.gen[ci] != g:
			t.cols[ci].addNull()
			t.cells[ci] = ""
		case cols[ci].repeated:
			s := "[" + strings.Join(p.lists[ci], ", ") + "]"
			t.cols[ci].addNested(s)
			t.cells[ci] = s
		}
	}
	t.endRow(t.cells)
}

// parquetName is the column name pandas gives a leaf: a LIST column is
// named after its field, not its ".list.element" leaf.
func parquetName(path []string) string {
	if n := len(path); n >= 3 && (path[n-2] == "list" || path[n-2] == "bag") &&
		(path[n-1] == "element" || path[n-1] == "item" || path[n-1] == "array") {
		path = path[:n-2]
	}
	return strings.Join(path, ".")
}

// add feeds one value to the column and returns its text.
func (c *pqColumn) add(col *colAcc, v parquet.Value) string {
	if v.IsNull() {
		col.addNull()
		return ""
	}
	switch c.kind {
	case parquet.Boolean:
		s := strconv.FormatBool(v.Boolean())
		col.addBool(s)
		return s
	case parquet.Int32:
		return c.addInt(col, int64(v.Int32()))
	case parquet.Int64:
		return c.addInt(col, v.Int64())
	case parquet.Int96:
		return addInt96(col, v.Int96())
	case parquet.Float:
		f := v.Float()
		s := strconv.FormatFloat(float64(f), 'g', -1, 32)
		col.addFloat(float64(f), s)
		return s
	case parquet.Double:
		f := v.Double()
		s := strconv.FormatFloat(f, 'g', -1, 64)
		col.addFloat(f, s)
		return s
	}
	return c.addBytes(col, v.ByteArray())
}

// addInt feeds an INT32 or INT64 value, read by its logical annotation,
// else by its legacy converted type, else as an integer.
func (c *pqColumn) addInt(col *colAcc, n int64) string {
	switch lt := c.logical.(type) {
	case *format.DateType:
		return addDays(col, n)
	case *format.TimestampType:
		at := unitInstant(n, lt.Unit.Value)
		s := formatInstant(at, lt.IsAdjustedToUTC)
		col.addTime(at, s, lt.IsAdjustedToUTC)
		return s
	case *format.DecimalType:
		s := decimalText(big.NewInt(n), c.scale)
		f, _ := strconv.ParseFloat(s, 64)
		col.addFloat(f, s)
		return s
	case *format.TimeType:
		s := strconv.FormatInt(n, 10)
		col.addString(s)
		return s
	}
	if c.hasConv {
		switch c.conv {
		case deprecated.Date:
			return addDays(col, n)
		case deprecated.TimestampMillis, deprecated.TimestampMicros:
			var at instant
			if c.conv == deprecated.TimestampMillis {
				at = unitInstant(n, &format.MilliSeconds{})
			} else {
				at = unitInstant(n, &format.MicroSeconds{})
			}
			s := formatInstant(at, true)
			col.addTime(at, s, true)
			return s
		}
	}
	s := strconv.FormatInt(n, 10)
	col.addInt(n, s)
	return s
}

// addDays feeds a date given as days since 1970-01-01.
func addDays(col *colAcc, n int64) string {
	at := instant{sec: n * 86400}
	s := time.Unix(at.sec, 0).UTC().Format("2006-01-02")
	col.addDate(at, s)
	return s
}

// addInt96 feeds a legacy timestamp: nanoseconds of the day, then the
// Julian day.
func addInt96(col *colAcc, x deprecated.Int96) string {
	nanos := int64(x[1])<<32 | int64(x[0])
	days := int64(x[2]) - 2440588
	at := instant{sec: days*86400 + nanos/1e9, nsec: int32(nanos % 1e9)}
	s := formatInstant(at, false)
	col.addTime(at, s, false)
	return s
}

// addBytes feeds a byte array: a decimal, a UUID, JSON, text, or else
// the hex of its start.
func (c *pqColumn) addBytes(col *colAcc, b []byte) string {
	switch c.logical.(type) {
	case *format.DecimalType:
		s := decimalText(new(big.Int).SetBytes(twosComplement(b)), c.scale)
		if len(b) > 0 && b[0]&0x80 != 0 {
			s = "-" + s
		}
		f, _ := strconv.ParseFloat(s, 64)
		col.addFloat(f, s)
		return s
	case *format.UUIDType:
		if len(b) == 16 {
			h := hex.EncodeToString(b)
			s := h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
			col.addString(s)
			return s
		}
	case *format.JsonType:
		s := string(b)
		col.addNested(s)
		return s
	}
	if utf8.Valid(b) {
		s := string(b)
		col.addString(s)
		return s
	}
	s := "0x" + hex.EncodeToString(b[:min(len(b), 32)])
	col.addString(s)
	return s
}

// text is a value's text inside a list.
func (c *pqColumn) text(v parquet.Value) string {
	switch c.kind {
	case parquet.ByteArray, parquet.FixedLenByteArray:
		return strconv.Quote(string(v.ByteArray()))
	}
	return v.String()
}

func unitInstant(n int64, unit format.TimeUnitValue) instant {
	switch unit.(type) {
	case *format.MilliSeconds:
		return instant{sec: floorDiv(n, 1e3), nsec: int32(floorMod(n, 1e3) * 1e6)}
	case *format.NanoSeconds:
		return instant{sec: floorDiv(n, 1e9), nsec: int32(floorMod(n, 1e9))}
	}
	return instant{sec: floorDiv(n, 1e6), nsec: int32(floorMod(n, 1e6) * 1e3)}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

// formatInstant is RFC 3339 with fractional seconds when there are any.
func formatInstant(at instant, utc bool) string {
	t := time.Unix(at.sec, int64(at.nsec)).UTC()
	layout := "2006-01-02T15:04:05.999999999"
	if utc {
		layout += "Z07:00"
	}
	return t.Format(layout)
}

// maxDecimalScale is the largest decimal scale a Parquet file may declare
// here: Parquet's own decimals hold at most 38 digits (FIXED_LEN_BYTE_ARRAY
// of 16 bytes); 76 leaves room for wider ones.
const maxDecimalScale = 76

// decimalText places the decimal point scale digits from the right.
func decimalText(n *big.Int, scale int32) string {
	s := n.String()
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	if scale > 0 && scale <= maxDecimalScale {
		if pad := int(scale) + 1 - len(s); pad > 0 {
			s = strings.Repeat("0", pad) + s
		}
		s = s[:len(s)-int(scale)] + "." + s[len(s)-int(scale):]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// twosComplement returns the magnitude of a big-endian two's complement number.
func twosComplement(b []byte) []byte {
	if len(b) == 0 || b[0]&0x80 == 0 {
		return b
	}
	out := make([]byte, len(b))
	for i := range b {
		out[i] = ^b[i]
	}
	for i := len(out) - 1; i >= 0; i-- {
		out[i]++
		if out[i] != 0 {
			break
		}
	}
	return out
}
