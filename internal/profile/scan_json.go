package profile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// jsonTable maps JSON records onto a table: object keys become columns in
// first-seen order; a key missing from a record is a null there.
type jsonTable struct {
	t          *table
	index      map[string]int
	seen       []int // row generation in which each column got a value
	gen        int
	nonObjects int
	compact    bytes.Buffer
}

func newJSONTable(t *table) *jsonTable {
	return &jsonTable{t: t, index: map[string]int{}}
}

func (jt *jsonTable) col(name string) int {
	if i, ok := jt.index[name]; ok {
		return i
	}
	i := jt.t.addColumn(strings.Clone(name))
	if i < 0 {
		return i // past MaxColumns: the key's values are left out
	}
	jt.index[name] = i
	jt.seen = append(jt.seen, 0)
	return i
}

// element reads one record from dec: an object, an array (columns "0",
// "1", ... as pandas names them) or a scalar (column "0").
func (jt *jsonTable) element(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	jt.gen++
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := kt.(string)
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					return err
				}
				jt.value(jt.col(key), raw)
			}
		case '[':
			jt.nonObjects++
			for i := 0; dec.More(); i++ {
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					return err
				}
				jt.value(jt.col(strconv.Itoa(i)), raw)
			}
		default:
			return fmt.Errorf("unexpected %v", v)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return err
		}
	default:
		jt.nonObjects++
		raw, err := json.Marshal(v)
		if err != nil {
			return err
		}
		jt.value(jt.col("0"), raw)
	}
	t := jt.t
	for i, c := range t.cols {
		if jt.seen[i] != jt.gen {
			c.addNull()
			t.cells[i] = ""
		}
	}
	t.endRow(t.cells)
	return nil
}

func (jt *jsonTable) value(ci int, raw []byte) {
	if ci < 0 || jt.seen[ci] == jt.gen {
		return // a repeated key: the first value counts
	}
	jt.seen[ci] = jt.gen
	c := jt.t.cols[ci]
	var text string
	switch raw[0] {
	case 'n':
		c.addNull()
	case 't', 'f':
		text = string(raw)
		c.addBool(text)
	case '"':
		text = unquoteJSON(raw)
		c.addString(text)
	case '{', '[':
		jt.compact.Reset()
		if json.Compact(&jt.compact, raw) == nil {
			text = jt.compact.String()
		} else {
			text = string(raw)
		}
		c.addNested(text)
	default:
		text = string(raw)
		if v, ok := parseInt(text); ok {
			c.addInt(v, text)
		} else if f, err := strconv.ParseFloat(text, 64); err == nil || errors.Is(err, strconv.ErrRange) {
			c.addFloat(f, text)
		} else {
			c.addString(text)
		}
	}
	jt.t.cells[ci] = text
}

// unquoteJSON decodes a JSON string literal; the common case has no escapes.
func unquoteJSON(raw []byte) string {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return string(inner)
	}
	return s
}

func (jt *jsonTable) notes() {
	if jt.nonObjects > 0 {
		sp := jt.t.sc.sp
		sp.Notes = append(sp.Notes, fmt.Sprintf("%d records are not JSON objects (arrays or scalars): their values are in columns \"0\", \"1\", ...", jt.nonObjects))
	}
}

// scanJSONArray reads a top-level array of records, one element at a time.
func (sc *scanner) scanJSONArray() error {
	sp := sc.sp
	sp.Format = FormatJSON
	dec := json.NewDecoder(sc.limit)
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("JSON: %w", err)
	}
	if tok != json.Delim('[') {
		return fmt.Errorf("JSON: want an array of records, found %v", tok)
	}
	t := sc.newTable(nil)
	jt := newJSONTable(t)
	truncated := false
	for dec.More() {
		if t.full() {
			truncated = true
			break
		}
		if t.rows%ctxCheckRows == 0 {
			if err := sc.ctx.Err(); err != nil {
				return err
			}
		}
		sc.limit.reset()
		if err := jt.element(dec); err != nil {
			return fmt.Errorf("JSON record %d: %w", t.rows+1, err)
		}
	}
	t.finish(truncated)
	jt.notes()
	return nil
}

// scanJSONLines reads one JSON record per line. Lines that are not valid
// JSON are skipped and counted (a truncated last line is common).
func (sc *scanner) scanJSONLines() error {
	sp := sc.sp
	sp.Format = FormatJSONL
	br := bufio.NewReaderSize(sc.limit, 64<<10)
	t := sc.newTable(nil)
	jt := newJSONTable(t)
	var buf []byte
	var badLines []int
	line, truncated := 0, false
	for {
		if t.full() {
			for {
				sc.limit.reset()
				l, err := readLine(br, &buf)
				if len(bytes.TrimSpace(l)) > 0 {
					truncated = true
					break
				}
				if err != nil {
					break
				}
			}
			break
		}
		if t.rows%ctxCheckRows == 0 {
			if err := sc.ctx.Err(); err != nil {
				return err
			}
		}
		sc.limit.reset()
		l, err := readLine(br, &buf)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if len(l) > 0 {
			line++
		}
		if l = bytes.TrimSpace(l); len(l) > 0 {
			if !json.Valid(l) {
				badLines = append(badLines, line)
			} else {
				dec := json.NewDecoder(bytes.NewReader(l))
				dec.UseNumber()
				if err := jt.element(dec); err != nil {
					return fmt.Errorf("JSON line %d: %w", line, err)
				}
			}
		}
		if err != nil {
			break
		}
	}
	t.finish(truncated)
	jt.notes()
	if n := len(badLines); n > 0 {
		show := badLines[:min(n, 5)]
		sp.Notes = append(sp.Notes, fmt.Sprintf("skipped %s of invalid JSON (line %s)", plural(n, "line"), joinInts(show)))
	}
	return nil
}

// readLine reads a line (without its newline) into *buf when it spans
// more than the reader's buffer.
func readLine(br *bufio.Reader, buf *[]byte) ([]byte, error) {
	chunk, err := br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return bytes.TrimSuffix(chunk, []byte("\n")), err
	}
	*buf = append((*buf)[:0], chunk...)
	for errors.Is(err, bufio.ErrBufferFull) {
		chunk, err = br.ReadSlice('\n')
		*buf = append(*buf, chunk...)
	}
	return bytes.TrimSuffix(*buf, []byte("\n")), err
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}
