package profile

import (
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
)

// table accumulates rows of any tabular format.
type table struct {
	sc     *scanner
	cols   []*colAcc
	rows   int
	hashes []uint64 // one per row, for duplicate rows
	res    *rowReservoir
	// cells is the current row as text, for hashing and the sample rows.
	cells               []string
	shortRows, longRows int
	expectCols          int  // header width, for budget shares
	idTracked           int  // columns keeping id hashes
	capped              bool // columns past MaxColumns were left out
}

// MaxColumns bounds the columns profiled per sample: each costs its own
// accumulators (a few KiB), and a header of a million names is a few MiB
// of text. The rest are left out, with a note.
const MaxColumns = 10000

func (sc *scanner) newTable(names []string) *table {
	t := &table{sc: sc, res: newRowReservoir(sc.opts.MaxSampleRows, sc.opts.Seed)}
	names, renamed := pandasNames(names)
	if renamed {
		sc.sp.Notes = append(sc.sp.Notes, "empty or repeated header names are renamed as pandas does (\"Unnamed: 3\", \"name.1\")")
	}
	t.expectCols = min(len(names), MaxColumns)
	for _, n := range names {
		if t.addColumn(n) < 0 {
			break
		}
	}
	return t
}

// addColumn adds a column. Its shares of the memory budgets count the
// columns known by then: all of a header's, or a JSON key's predecessors.
// Past MaxColumns it adds none and returns -1 (noted once).
func (t *table) addColumn(name string) int {
	i := len(t.cols)
	if i >= MaxColumns {
		if !t.capped {
			t.capped = true
			t.sc.sp.Notes = append(t.sc.sp.Notes, fmt.Sprintf("more than %d columns: the first %d are profiled, the rest left out", MaxColumns, MaxColumns))
		}
		return -1
	}
	n := max(t.expectCols, i+1)
	c := newColAcc(name, max(minStoredPerColumn, storedValuesBudget/n),
		min(exactDistinctKeys, max(minDistinctPerColumn, distinctKeysBudget/n)), t.sc.opts.Seed, i)
	if t.idTracked < idColumnsTracked && idishName(name) {
		c.trackID = true
		t.idTracked++
	}
	c.nulls = t.rows // a JSON key first seen now was missing before
	t.cols = append(t.cols, c)
	t.cells = append(t.cells, "")
	return i
}

// full reports whether the row or byte cap is reached.
func (t *table) full() bool {
	return t.rows >= t.sc.opts.MaxScanRows || t.sc.raw.n >= t.sc.opts.MaxScanBytes
}

// fitRow counts a ragged row (shorter or longer than the table's columns)
// and cuts one that is too long to the columns.
func (t *table) fitRow(rec []string) []string {
	n := len(t.cols)
	switch {
	case len(rec) < n:
		t.shortRows++
	case len(rec) > n:
		if !t.capped { // cells of columns left out are not a ragged row
			t.longRows++
		}
		rec = rec[:n]
	}
	return rec
}

// textRow adds a row of text cells (CSV, TSV, Excel). rec may be reused by
// the caller after the call. Each cell is hashed once, for its column's
// distinct count and for the row's duplicate check.
func (t *table) textRow(rec []string) {
	n := len(t.cols)
	rec = t.fitRow(rec)
	rh := uint64(len(rec))
	for i, s := range rec {
		h := xxhash.Sum64String(s)
		rh = mixRowHash(rh, h)
		t.cols[i].addText(s, h)
	}
	for i := len(rec); i < n; i++ {
		t.cols[i].addNull()
	}
	t.addRow(rh, rec)
}

// endRow ends a row whose cells were added value by value (JSON, Parquet).
func (t *table) endRow(cells []string) {
	rh := uint64(len(cells))
	for _, s := range cells {
		rh = mixRowHash(rh, xxhash.Sum64String(s))
	}
	t.addRow(rh, cells)
}

func mixRowHash(rh, h uint64) uint64 {
	return bits.RotateLeft64((rh^h)*0x9e3779b97f4a7c15, 29)
}

// addRow records the row's hash and offers it to the reservoir. A kept
// row's cells are copies cut to what is shown of them: a cell of 30 MiB
// is not held for a 200-character view, nor does it hold the record it
// came from.
func (t *table) addRow(rh uint64, cells []string) {
	t.hashes = append(t.hashes, rh)
	if t.res.want(t.rows) {
		row := make([]string, len(t.cols))
		for i := range min(len(row), len(cells)) {
			row[i] = strings.Clone(cutCell(cells[i]))
		}
		t.res.put(t.rows, row)
	}
	t.rows++
}

// keptCellBytes bounds a sample cell as kept: sampleCellRunes characters
// of up to 4 bytes, and one more to say it was cut.
const keptCellBytes = 4*sampleCellRunes + 4

// cutCell is s cut to keptCellBytes, on a character's start.
func cutCell(s string) string {
	if len(s) <= keptCellBytes {
		return s
	}
	i := keptCellBytes
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

// finish fills the sample profile. truncated: rows remain past the cap.
func (t *table) finish(truncated bool) {
	sp := t.sc.sp
	sp.Rows = t.rows
	sp.Truncated = truncated
	sp.ScannedBytes = t.sc.raw.n
	sp.RaggedShort, sp.RaggedLong = t.shortRows, t.longRows
	// Sorting the row hashes and each column's values are independent:
	// spread them over the cores.
	sp.Columns = make([]*ColumnProfile, len(t.cols))
	jobs := make(chan int)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		slices.Sort(t.hashes)
		for i := 1; i < len(t.hashes); i++ {
			if t.hashes[i] == t.hashes[i-1] {
				sp.DuplicateRows++
			}
		}
		t.hashes = nil
		for i := range jobs {
			sp.Columns[i] = t.cols[i].profile()
		}
	}()
	for range max(1, min(len(t.cols), runtime.GOMAXPROCS(0))-1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				sp.Columns[i] = t.cols[i].profile()
			}
		}()
	}
	for i := range t.cols {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	sp.SampleRows, sp.SampleRowNumbers = t.res.sorted()
	// Pad rows taken before a late JSON key appeared.
	for i, r := range sp.SampleRows {
		for len(r) < len(sp.Columns) {
			r = append(r, "")
		}
		sp.SampleRows[i] = r
	}
	if truncated {
		sp.Notes = append(sp.Notes, fmt.Sprintf("statistics cover the first %d rows (%s of %s read); the file continues", t.rows, sizeText(sp.ScannedBytes), sizeText(sp.SizeBytes)))
	}
	if t.shortRows > 0 {
		sp.Notes = append(sp.Notes, fmt.Sprintf("%s fewer fields than the header; the missing cells count as null", rowsHave(t.shortRows)))
	}
	if t.longRows > 0 {
		sp.Notes = append(sp.Notes, fmt.Sprintf("%s more fields than the header; the extra cells are ignored here, and pandas.read_csv raises on them unless on_bad_lines='skip' (or 'warn')", rowsHave(t.longRows)))
	}
	if n := t.sc.limit.invalid(); n > 0 {
		sp.Notes = append(sp.Notes, fmt.Sprintf("%s past the first 64 KiB (shown as U+FFFD); pandas may need encoding='latin-1' or encoding_errors='replace'", plural(n, "invalid UTF-8 sequence")))
	}
	for _, c := range sp.Columns {
		if c.Type == TypeString && len(c.Kinds) > 1 {
			sp.Notes = append(sp.Notes, fmt.Sprintf("column %s has mixed values (%s): typed as string", strconv.Quote(c.Name), kindsText(c)))
		}
	}
	if t.sc.sp.Format == FormatCSV || t.sc.sp.Format == FormatTSV {
		if headerLooksLikeData(sp.Columns) {
			sp.Notes = append(sp.Notes, "the first row looks like data, not a header (every name parses as a number or date): it may need header=None")
		}
	}
}

func rowsHave(n int) string {
	if n == 1 {
		return "1 row has"
	}
	return strconv.Itoa(n) + " rows have"
}

// kindsText is "950 int, 50 string", in a fixed order.
func kindsText(c *ColumnProfile) string {
	var parts []string
	for _, ty := range kindTypes {
		if n := c.Kinds[ty]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, ty))
		}
	}
	return strings.Join(parts, ", ")
}

func headerLooksLikeData(cols []*ColumnProfile) bool {
	if len(cols) == 0 {
		return false
	}
	var p dtParse
	for _, c := range cols {
		n := strings.TrimSpace(c.Name)
		if n == "" {
			return false
		}
		_, isInt := parseInt(n)
		_, isFloat := parseFloat(n)
		if !isInt && !isFloat && !parseDatetime(n, &p) {
			return false
		}
	}
	return true
}

// pandasNames renames empty and repeated header names the way
// pandas.read_csv does, so schemas name the columns a DataFrame will have.
func pandasNames(names []string) ([]string, bool) {
	out := make([]string, len(names))
	seen := make(map[string]int, len(names))
	for _, n := range names {
		seen[n]++
	}
	used := make(map[string]bool, len(names))
	next := map[string]int{} // a repeated name's next suffix to try: linear in the names, however repeated
	renamed := false
	for i, n := range names {
		if n == "" {
			n = fmt.Sprintf("Unnamed: %d", i)
			renamed = true
		}
		if used[n] {
			k := max(next[n], 1)
			for used[fmt.Sprintf("%s.%d", n, k)] || (seen[fmt.Sprintf("%s.%d", n, k)] > 0) {
				k++
			}
			next[n] = k + 1
			n = fmt.Sprintf("%s.%d", n, k)
			renamed = true
		}
		used[n] = true
		out[i] = strings.Clone(n)
	}
	return out, renamed
}

func sizeText(n int64) string {
	switch {
	case n >= 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + " GiB"
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
