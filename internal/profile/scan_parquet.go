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
func (sc *scanner) scanParquet() error {
	sp := sc.sp
	sp.Format, sp.Encoding = FormatParquet, ""
	pf, err := parquet.OpenFile(sc.file, sp.SizeBytes)
	if err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	schema := pf.Schema()
	paths := schema.Columns()
	names := make([]string, len(paths))
	cols := make([]pqColumn, len(paths))
	for i, p := range paths {
		names[i] = parquetName(p)
		leaf, ok := schema.Lookup(p...)
		if !ok {
			return fmt.Errorf("parquet: column %s not in schema", names[i])
		}
		typ := leaf.Node.Type()
		c := pqColumn{kind: typ.Kind(), repeated: leaf.MaxRepetitionLevel > 0}
		if lt := typ.LogicalType(); lt != nil {
			c.logical = lt.Value
			if d, ok := lt.Value.(*format.DecimalType); ok {
				c.scale = d.Scale
			}
		}
		if ct := typ.ConvertedType(); ct != nil {
			c.conv, c.hasConv = *ct, true
		}
		cols[i] = c
	}
	t := sc.newTable(names)
	total := pf.NumRows()
	buf := make([]parquet.Row, parquetRowBatch)
	lists := make([][]string, len(cols))
	gen := make([]int, len(cols))
	g := 0
	truncated := false
scan:
	for _, rg := range pf.RowGroups() {
		rows := rg.Rows()
		for {
			n, err := rows.ReadRows(buf)
			for _, row := range buf[:n] {
				if t.full() {
					truncated = true
					break
				}
				if t.rows%ctxCheckRows == 0 {
					if err := sc.ctx.Err(); err != nil {
						rows.Close()
						return err
					}
				}
				g++
				for _, v := range row {
					ci := v.Column()
					if ci < 0 || ci >= len(cols) {
						continue
					}
					if cols[ci].repeated {
						if gen[ci] != g {
							gen[ci], lists[ci] = g, lists[ci][:0]
						}
						if !v.IsNull() {
							lists[ci] = append(lists[ci], cols[ci].text(v))
						}
						continue
					}
					gen[ci] = g
					t.cells[ci] = cols[ci].add(t.cols[ci], v)
				}
				for ci := range cols {
					switch {
					case gen[ci] != g:
						t.cols[ci].addNull()
						t.cells[ci] = ""
					case cols[ci].repeated:
						s := "[" + strings.Join(lists[ci], ", ") + "]"
						t.cols[ci].addNested(s)
						t.cells[ci] = s
					}
				}
				t.endRow(t.cells)
			}
			if truncated {
				rows.Close()
				break scan
			}
			if errors.Is(err, io.EOF) || (err == nil && n == 0) {
				break
			}
			if err != nil {
				rows.Close()
				return fmt.Errorf("parquet: %w", err)
			}
		}
		rows.Close()
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
	case parquet.Int32, parquet.Int64:
		var n int64
		if c.kind == parquet.Int32 {
			n = int64(v.Int32())
		} else {
			n = v.Int64()
		}
		switch lt := c.logical.(type) {
		case *format.DateType:
			at := instant{sec: n * 86400}
			s := time.Unix(at.sec, 0).UTC().Format("2006-01-02")
			col.addDate(at, s)
			return s
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
				at := instant{sec: n * 86400}
				s := time.Unix(at.sec, 0).UTC().Format("2006-01-02")
				col.addDate(at, s)
				return s
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
	case parquet.Int96:
		// Legacy timestamps: nanoseconds of the day, then the Julian day.
		x := v.Int96()
		nanos := int64(x[1])<<32 | int64(x[0])
		days := int64(x[2]) - 2440588
		at := instant{sec: days*86400 + nanos/1e9, nsec: int32(nanos % 1e9)}
		s := formatInstant(at, false)
		col.addTime(at, s, false)
		return s
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
	// Byte arrays.
	b := v.ByteArray()
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

// decimalText places the decimal point scale digits from the right.
func decimalText(n *big.Int, scale int32) string {
	s := n.String()
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	if scale > 0 {
		for int32(len(s)) <= scale {
			s = "0" + s
		}
		s = s[:int32(len(s))-scale] + "." + s[int32(len(s))-scale:]
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
