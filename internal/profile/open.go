package profile

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

const (
	// sniffBytes is how much of a file is looked at to choose its format,
	// encoding and delimiter.
	sniffBytes = 64 << 10
	// binaryProbeBytes: NUL bytes or many control bytes here mean "not text".
	binaryProbeBytes = 1 << 10
	// maxRecordBytes bounds one CSV record or JSON value: an unclosed quote
	// would otherwise make the CSV reader buffer the rest of the file.
	maxRecordBytes = 32 << 20
)

// magic numbers of binary formats, to name what a non-text file looks like.
var magics = []struct {
	prefix, what string
}{
	{"PAR1", "a Parquet file"},
	{"PK\x03\x04", "a zip archive (or .xlsx)"},
	{"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "a legacy Office file (.xls)"},
	{"\x1f\x8b", "gzip data"},
	{"\x89PNG", "a PNG image"},
	{"\xff\xd8\xff", "a JPEG image"},
	{"GIF8", "a GIF image"},
	{"%PDF", "a PDF document"},
	{"\x7fELF", "an ELF executable"},
	{"SQLite format 3\x00", "an SQLite database"},
	{"BZh", "bzip2 data"},
	{"\xfd7zXZ\x00", "xz data"},
	{"\x28\xb5\x2f\xfd", "zstd data"},
}

func lookLike(head []byte) string {
	for _, m := range magics {
		if bytes.HasPrefix(head, []byte(m.prefix)) {
			return m.what
		}
	}
	return ""
}

// scanner profiles one sample. It owns the readers stacked over the file.
type scanner struct {
	ctx   context.Context
	opts  Options
	sp    *SampleProfile
	file  *os.File
	raw   *countingReader // bytes read from disk
	ext   string          // lower-case, ".gz" removed
	limit *recordLimiter  // bounds one record; text formats only
}

// textStream is the reader a text file is read through, after whatever
// decompression and decoding it needs, and its sniffed start.
type textStream struct {
	br   *bufio.Reader
	head []byte // up to sniffBytes peeked from br
}

// wrap makes r, a layer over the stream so far, the stream, and peeks at
// its start.
func (t *textStream) wrap(r io.Reader) {
	t.br = bufio.NewReaderSize(r, sniffBytes)
	t.head, _ = t.br.Peek(sniffBytes)
}

// truncated reports whether the head is a prefix of a longer stream.
func (t *textStream) truncated() bool { return len(t.head) == sniffBytes }

// run sniffs the file's format in phases, each deciding or passing on: a
// binary format by magic number, then compression, then the text encoding,
// then the text format by extension and content.
func (sc *scanner) run() error {
	sp := sc.sp
	sc.ext = strings.ToLower(filepath.Ext(sp.FileName))
	if sc.ext == ".gz" || sc.ext == ".gzip" {
		sc.ext = strings.ToLower(filepath.Ext(strings.TrimSuffix(sp.FileName, filepath.Ext(sp.FileName))))
	}
	if sp.SizeBytes == 0 {
		sp.Format = FormatEmpty
		sp.Notes = append(sp.Notes, "the file is empty (0 bytes)")
		return nil
	}
	sc.raw = &countingReader{r: sc.file}
	ts := &textStream{}
	ts.wrap(sc.raw)
	if binary, err := sc.scanBinary(ts.head); binary {
		return err
	}
	if bytes.HasPrefix(ts.head, []byte("\x1f\x8b")) {
		gz, err := gzip.NewReader(ts.br)
		if err != nil {
			return fmt.Errorf("%w: gzip: %v", ErrNotText, err)
		}
		defer gz.Close()
		sp.Compression = "gzip"
		ts.wrap(gz)
	}
	sc.decodeUnicode(ts)
	if err := checkText(ts.head, sp.FileName); err != nil {
		return err
	}
	if len(bytes.TrimSpace(ts.head)) == 0 && !ts.truncated() {
		sp.Format = FormatEmpty
		sp.Notes = append(sp.Notes, fmt.Sprintf("the file holds no data (%d bytes of whitespace)", sp.SizeBytes))
		return nil
	}
	if sp.Encoding == "utf-8" && !validUTF8Prefix(ts.head, ts.truncated()) {
		sc.decodeSingleByte(ts)
	}
	sc.limit = &recordLimiter{r: ts.br, max: maxRecordBytes, checkUTF8: strings.HasPrefix(sp.Encoding, "utf-8")}
	return sc.scanTextFormat(ts)
}

// scanBinary scans a binary format, chosen by magic number first: a
// Parquet file named .csv is still a Parquet file, and says so. A file
// named as a binary format without its magic number is refused. binary
// is false for anything else, left to the text formats.
func (sc *scanner) scanBinary(head []byte) (binary bool, err error) {
	sp := sc.sp
	switch {
	case bytes.HasPrefix(head, []byte("PAR1")):
		if sc.ext != ".parquet" && sc.ext != ".pq" {
			sp.Notes = append(sp.Notes, fmt.Sprintf("the file is Parquet although named %s: read it with pandas.read_parquet", sp.FileName))
		}
		return true, sc.scanParquet()
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		if sc.ext == ".xlsx" || sc.ext == ".xlsm" || bytes.Contains(head, []byte("xl/")) {
			return true, sc.scanExcel()
		}
		return true, fmt.Errorf("%w: %s is a zip archive; unpack it and give the files as samples", ErrUnsupported, sp.FileName)
	case bytes.HasPrefix(head, []byte("\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1")):
		return true, fmt.Errorf("%w: %s is a legacy Office file (.xls); save it as .xlsx or CSV", ErrUnsupported, sp.FileName)
	case sc.ext == ".parquet" || sc.ext == ".pq":
		return true, fmt.Errorf("%w: %s is named .parquet but has no Parquet magic number", ErrUnsupported, sp.FileName)
	case sc.ext == ".xlsx" || sc.ext == ".xlsm":
		return true, fmt.Errorf("%w: %s is named %s but is not a zip-based Excel file", ErrUnsupported, sp.FileName, sc.ext)
	case sc.ext == ".xls":
		return true, fmt.Errorf("%w: %s: legacy .xls is not supported; save it as .xlsx or CSV", ErrUnsupported, sp.FileName)
	}
	return false, nil
}

// decodeUnicode sets the encoding to UTF-8, or by its byte-order mark to
// UTF-16 (decoded from here on) or UTF-8 with BOM (the mark skipped).
// UTF-16 has NUL bytes, so it is decided before the binary probe.
func (sc *scanner) decodeUnicode(ts *textStream) {
	sp := sc.sp
	sp.Encoding = "utf-8"
	switch head := ts.head; {
	case bytes.HasPrefix(head, []byte{0xff, 0xfe}) || bytes.HasPrefix(head, []byte{0xfe, 0xff}):
		if head[0] == 0xff {
			sp.Encoding = "utf-16le"
		} else {
			sp.Encoding = "utf-16be"
		}
		dec := unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM).NewDecoder()
		ts.wrap(transform.NewReader(ts.br, dec))
		sp.Notes = append(sp.Notes, fmt.Sprintf("encoding: %s (pandas: encoding='utf-16')", sp.Encoding))
	case bytes.HasPrefix(head, []byte{0xef, 0xbb, 0xbf}):
		sp.Encoding = "utf-8 with BOM"
		_, _ = ts.br.Discard(3)
		ts.head = head[3:]
	}
}

// decodeSingleByte decodes text that is not UTF-8 as Windows-1252 or
// Latin-1 from here on.
func (sc *scanner) decodeSingleByte(ts *textStream) {
	sp := sc.sp
	if hasC1(ts.head) {
		// Bytes 0x80-0x9f are control codes in Latin-1 but letters and
		// punctuation (€, curly quotes) in Windows-1252, the usual
		// source of such files; decoded as Latin-1 they would reach
		// the prompt as invisible control characters. Windows-1252
		// agrees with Latin-1 on every other byte.
		sp.Encoding = "cp1252"
		sp.Notes = append(sp.Notes, "encoding: not UTF-8; bytes 0x80-0x9f present, decoded as Windows-1252 here; pandas: encoding='cp1252'")
		ts.wrap(charmap.Windows1252.NewDecoder().Reader(ts.br))
		return
	}
	sp.Encoding = "latin-1"
	sp.Notes = append(sp.Notes, "encoding: not UTF-8; decoded as Latin-1 (ISO-8859-1) here; pandas: encoding='latin-1'")
	ts.wrap(&latin1Reader{r: ts.br})
}

// scanTextFormat scans text as the format its extension names, or else
// as the format its start looks like: a JSON array, JSON Lines, delimited
// values, or plain text.
func (sc *scanner) scanTextFormat(ts *textStream) error {
	head, truncated := ts.head, ts.truncated()
	first := firstNonSpace(head)
	switch sc.ext {
	case ".csv":
		d, _ := sniffDelimiter(head, truncated, ',')
		return sc.scanCSV(d)
	case ".tsv", ".tab":
		return sc.scanCSV('\t')
	case ".json":
		if first == '[' {
			return sc.scanJSONArray()
		}
		if first == '{' {
			if firstLineIsJSON(head, truncated) {
				return sc.scanJSONLines()
			}
			sc.sp.Notes = append(sc.sp.Notes, "a single JSON document, not an array of records or JSON Lines: shown as text")
			return sc.scanText()
		}
	case ".jsonl", ".ndjson":
		return sc.scanJSONLines()
	}
	// Unknown extension (or JSON that is not): sniff.
	if first == '[' && json.Valid(bytes.TrimSpace(head)) || first == '[' && truncated {
		return sc.scanJSONArray()
	}
	if first == '{' && firstLineIsJSON(head, truncated) {
		return sc.scanJSONLines()
	}
	if d, ok := sniffDelimiter(head, truncated, 0); ok {
		return sc.scanCSV(d)
	}
	return sc.scanText()
}

// checkText rejects binary data: a NUL byte, or more than 5% control bytes,
// in the first KiB.
func checkText(head []byte, name string) error {
	probe := head
	if len(probe) > binaryProbeBytes {
		probe = probe[:binaryProbeBytes]
	}
	what := lookLike(head)
	if what != "" {
		what = " (it looks like " + what + ")"
	}
	ctrl := 0
	for i, c := range probe {
		switch {
		case c == 0:
			return fmt.Errorf("%w: %s has a NUL byte at offset %d%s; a binary file given as %s?", ErrNotText, name, i, what, extOf(name))
		case c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' && c != 0x1b, c == 0x7f:
			ctrl++
		}
	}
	if ctrl > 0 && ctrl*20 > len(probe) {
		return fmt.Errorf("%w: %s has %d control bytes in its first %d bytes%s; a binary file given as %s?", ErrNotText, name, ctrl, len(probe), what, extOf(name))
	}
	return nil
}

func extOf(name string) string {
	if e := filepath.Ext(name); e != "" {
		return e
	}
	return "text"
}

// validUTF8Prefix reports whether b is UTF-8, allowing a rune cut at the end
// when b is a prefix of a longer stream.
func validUTF8Prefix(b []byte, truncated bool) bool {
	if truncated {
		for i := 0; i < utf8.UTFMax && len(b) > 0; i++ {
			if utf8.Valid(b) {
				return true
			}
			b = b[:len(b)-1]
		}
	}
	return utf8.Valid(b)
}

func hasC1(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 && c <= 0x9f {
			return true
		}
	}
	return false
}

func firstNonSpace(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c
	}
	return 0
}

// firstLineIsJSON tells JSON Lines from one JSON document spread over
// lines: the first non-empty line of a JSON Lines file is a whole value.
// A first line longer than the sniff window is taken for JSON Lines.
func firstLineIsJSON(head []byte, truncated bool) bool {
	head = bytes.TrimLeft(head, " \t\r\n")
	i := bytes.IndexByte(head, '\n')
	if i < 0 {
		if truncated {
			return true
		}
		i = len(head)
	}
	return json.Valid(bytes.TrimSpace(head[:i]))
}

// delimScore is how well one delimiter splits the sniffed lines: the most
// common number of fields, and the share of lines that have it.
type delimScore struct {
	d           rune
	mode        int
	consistency float64
}

// sniffDelimiter picks the delimiter that splits the sniffed lines into the
// same number (more than one) of fields most consistently, header included.
// With prefer set (a .csv file), that delimiter wins unless it splits
// nothing or is inconsistent where another is not.
func sniffDelimiter(head []byte, truncated bool, prefer rune) (rune, bool) {
	if truncated {
		if i := bytes.LastIndexByte(head, '\n'); i > 0 {
			head = head[:i+1]
		}
	}
	var best *delimScore
	var preferred delimScore
	for _, d := range []rune{',', '\t', ';', '|'} {
		s, ok := scoreDelimiter(head, truncated, d)
		if !ok {
			continue
		}
		if d == prefer {
			preferred = s
		}
		if s.mode < 2 {
			continue
		}
		if best == nil || s.consistency > best.consistency || (s.consistency == best.consistency && s.mode > best.mode) {
			cp := s
			best = &cp
		}
	}
	if prefer != 0 {
		if best == nil || (preferred.mode >= 2 && preferred.consistency >= 0.9) || preferred.consistency >= best.consistency {
			return prefer, true
		}
		return best.d, true
	}
	if best == nil || best.consistency < 0.8 {
		return 0, false
	}
	return best.d, true
}

// scoreDelimiter splits up to 100 records of head by d; ok is false when
// there is not one record.
func scoreDelimiter(head []byte, truncated bool, d rune) (s delimScore, ok bool) {
	r := csv.NewReader(bytes.NewReader(head))
	r.Comma = d
	r.LazyQuotes = true
	r.FieldsPerRecord = -1
	counts := map[int]int{}
	n := 0
	for n < 100 {
		rec, err := r.Read()
		if err != nil {
			break
		}
		counts[len(rec)]++
		n++
	}
	if truncated && n > 1 {
		n-- // the last record may be cut by the sniff window; weigh it out
	}
	if n == 0 {
		return s, false
	}
	s.d = d
	for fields, c := range counts {
		if c > counts[s.mode] || (c == counts[s.mode] && fields > s.mode) {
			s.mode = fields
		}
	}
	s.consistency = min(1, float64(counts[s.mode])/float64(n))
	return s, true
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// recordLimiter fails a read once more than max bytes have been read since
// the last reset (one record). With checkUTF8 it also counts invalid UTF-8
// sequences in what passes through, which is cheaper here, a chunk at a
// time, than cell by cell.
type recordLimiter struct {
	r         io.Reader
	n         int
	max       int
	checkUTF8 bool
	carry     []byte // the start of a rune cut at the end of the last read
	bad       int
}

func (l *recordLimiter) Read(p []byte) (int, error) {
	if l.n > l.max {
		return 0, fmt.Errorf("%w: a record is larger than %d MiB (an unclosed quote?)", ErrRecordTooLarge, l.max>>20)
	}
	n, err := l.r.Read(p)
	l.n += n
	if l.checkUTF8 && n > 0 {
		l.scanUTF8(p[:n])
	}
	return n, err
}

func (l *recordLimiter) reset() { l.n = 0 }

func (l *recordLimiter) invalid() int {
	if l == nil {
		return 0
	}
	return l.bad
}

func (l *recordLimiter) scanUTF8(b []byte) {
	if len(l.carry) > 0 {
		x := append(l.carry, b[:min(len(b), utf8.UTFMax)]...)
		r, size := utf8.DecodeRune(x)
		if r == utf8.RuneError && size <= 1 {
			l.bad++
		} else {
			b = b[size-len(l.carry):]
		}
		l.carry = l.carry[:0]
	}
	// Keep a rune cut at the end for the next read.
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if c := b[i]; c&0xc0 != 0x80 {
			if c >= utf8.RuneSelf && !utf8.FullRune(b[i:]) {
				l.carry = append(l.carry[:0], b[i:]...)
				b = b[:i]
			}
			break
		}
	}
	if utf8.Valid(b) {
		return
	}
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			l.bad++
		}
		b = b[size:]
	}
}

// latin1Reader decodes ISO-8859-1 into UTF-8: every byte is the code point
// of the same number.
type latin1Reader struct {
	r        io.Reader
	buf, dst []byte // reused
	out      []byte // decoded, not yet returned
}

func (l *latin1Reader) Read(p []byte) (int, error) {
	for len(l.out) == 0 {
		if l.buf == nil {
			l.buf = make([]byte, 16<<10)
		}
		n, err := l.r.Read(l.buf)
		out := l.dst[:0]
		for _, c := range l.buf[:n] {
			if c < utf8.RuneSelf {
				out = append(out, c)
			} else {
				out = append(out, 0xc0|c>>6, 0x80|c&0x3f)
			}
		}
		l.dst, l.out = out, out
		if n == 0 && err != nil {
			return 0, err
		}
	}
	n := copy(p, l.out)
	l.out = l.out[n:]
	return n, nil
}
