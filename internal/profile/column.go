package profile

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
)

// Memory bounds. Budgets are per sample, shared by its columns, so that a
// wide file stays within a few hundred MiB whatever its row count.
const (
	// storedValuesBudget is how many numeric values are kept for exact
	// medians (8 bytes each: 64 MiB). A column past its share keeps a
	// seeded uniform sample of that many values instead.
	storedValuesBudget = 8 << 20
	minStoredPerColumn = 1 << 12
	// distinctKeysBudget bounds the exact sets of value hashes (about 16
	// bytes a key); a column has at most exactDistinctKeys of them, and
	// past its share counts distinct values with HyperLogLog.
	distinctKeysBudget   = 4 << 20
	exactDistinctKeys    = 1 << 14
	minDistinctPerColumn = 1 << 10
	// idColumnsTracked: columns with id-ish names keep every value's hash
	// to know exactly whether they are unique (8 bytes a row); the first
	// few such columns only.
	idColumnsTracked = 8
	// topValuesMaxDistinct: columns with at most this many distinct values
	// list their top values.
	topValuesMaxDistinct = 50
	topValuesShown       = 10
	examplesPerKind      = 3
)

// kind indexes the per-value type counts.
type kind uint8

const (
	kInt kind = iota
	kFloat
	kBool
	kDate
	kString
	numKinds
)

var kindTypes = [numKinds]ColumnType{TypeInt, TypeFloat, TypeBool, TypeDatetime, TypeString}

// isNullToken reports pandas' default missing-value markers (read_csv
// na_values), so that a column's nullability matches what pandas will see.
func isNullToken(s string) bool {
	switch s {
	case "", "NA", "N/A", "n/a", "NULL", "null", "None", "NaN", "nan", "-NaN", "-nan",
		"<NA>", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "1.#IND", "1.#QNAN":
		return true
	}
	return false
}

// colAcc accumulates one column's statistics.
type colAcc struct {
	name     string
	nulls    int
	kinds    [numKinds]int
	examples [numKinds][]string
	nested   bool
	minLen   int
	maxLen   int
	num      numAcc
	dt       dtAcc
	dist     distinctAcc
	// Exact uniqueness for id-ish names: every value's hash, sorted at the end.
	idHashes []uint64
	trackID  bool
	scratch  dtParse
	// decimalComma counts string values that are numbers with a decimal
	// comma; thousandsComma those grouped in threes by commas ("12,500",
	// "1,234.5"), which a decimal comma reading would get wrong.
	decimalComma, thousandsComma int
}

func newColAcc(name string, storeLimit, distinctLimit int, seed uint64, idx int) *colAcc {
	c := &colAcc{name: name, minLen: -1}
	c.num.init(storeLimit, seed, idx)
	c.dist.exact = map[uint64]int32{}
	c.dist.limit = distinctLimit
	return c
}

func (c *colAcc) addNull() { c.nulls++ }

// addText classifies a text cell (CSV, TSV, Excel); h is its xxhash.
func (c *colAcc) addText(s string, h uint64) {
	if isNullToken(s) {
		c.nulls++
		return
	}
	c.dist.add(h, s)
	if c.trackID {
		c.idHashes = append(c.idHashes, h)
	}
	t := s
	if s[0] == ' ' || s[len(s)-1] == ' ' || s[0] == '\t' || s[len(s)-1] == '\t' {
		// pandas' number parser skips surrounding blanks; a blank-only cell is a string.
		t = strings.Trim(s, " \t")
		if t == "" {
			c.addKind(kString, s)
			c.addLen(s)
			return
		}
	}
	b := t[0]
	if isDigit(b) || b == '-' || b == '+' || b == '.' {
		if v, ok := parseInt(t); ok {
			c.addKind(kInt, s)
			c.num.addInt(v)
			return
		}
		if f, ok := parseFloat(t); ok {
			c.addKind(kFloat, s)
			c.num.addFloat(f)
			return
		}
		if f, ok := infinity(t); ok {
			c.addKind(kFloat, s)
			c.num.addFloat(f)
			return
		}
		if isDigit(b) && c.tryDate(t, s) {
			return
		}
	} else {
		switch t {
		case "True", "TRUE", "true", "False", "FALSE", "false":
			c.addKind(kBool, s)
			return
		}
		if f, ok := infinity(t); ok {
			c.addKind(kFloat, s)
			c.num.addFloat(f)
			return
		}
		if isLetter(b) && len(t) >= 10 && c.tryDate(t, s) {
			return
		}
	}
	c.addKind(kString, s)
	c.addLen(s)
	if isDecimalComma(t) {
		c.decimalComma++
	}
	if thousandsRe.MatchString(t) {
		c.thousandsComma++
	}
}

// thousandsRe is a number whose integer digits are grouped in threes by
// commas, as US and Excel exports write them.
var thousandsRe = regexp.MustCompile(`^[+-]?\d{1,3}(,\d{3})+(\.\d+)?$`)

// isDecimalComma: "1,5", "-0,25", "1.234,5" (a European decimal comma).
func isDecimalComma(s string) bool {
	i := 0
	if s[0] == '-' || s[0] == '+' {
		i = 1
	}
	comma, digits := -1, 0
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case isDigit(c):
			digits++
		case c == ',' && comma < 0:
			comma = i
		case c == '.' && comma < 0:
		default:
			return false
		}
	}
	return comma > 0 && comma < len(s)-1 && digits > 0
}

// The add* methods below take values typed by their source (JSON,
// Parquet); text is how the value is shown and counted.

// addString is a string by its source's typing: only datetimes are looked for in it.
func (c *colAcc) addString(s string) {
	c.addSeen(s)
	if len(s) > 0 && (isDigit(s[0]) || isLetter(s[0])) && c.tryDate(s, s) {
		return
	}
	c.addKind(kString, s)
	c.addLen(s)
}

// addNested is a JSON object or array, kept as its compact text.
func (c *colAcc) addNested(s string) {
	c.nested = true
	c.addSeen(s)
	c.addKind(kString, s)
	c.addLen(s)
}

func (c *colAcc) addInt(v int64, text string) {
	c.addSeen(text)
	c.addKind(kInt, text)
	c.num.addInt(v)
}

func (c *colAcc) addFloat(f float64, text string) {
	c.addSeen(text)
	c.addKind(kFloat, text)
	c.num.addFloat(f)
}

func (c *colAcc) addBool(text string) {
	c.addSeen(text)
	c.addKind(kBool, text)
}

// addTime is a timestamp.
func (c *colAcc) addTime(at instant, text string, zoned bool) {
	c.addSeen(text)
	c.addKind(kDate, text)
	shape := tsTime | tsT | tsSec
	if at.nsec != 0 {
		shape |= tsFrac
	}
	if zoned {
		shape |= tsZone
	}
	c.dt.add(dtParse{n: 1, pats: [2]datePat{patISO}, at: [2]instant{at}, shape: shape}, text)
}

// addDate is a calendar date.
func (c *colAcc) addDate(at instant, text string) {
	c.addSeen(text)
	c.addKind(kDate, text)
	c.dt.add(dtParse{n: 1, pats: [2]datePat{patISO}, at: [2]instant{at}}, text)
}

// addSeen counts a non-null value for distinct counts and uniqueness.
func (c *colAcc) addSeen(text string) {
	h := xxhash.Sum64String(text)
	c.dist.add(h, text)
	if c.trackID {
		c.idHashes = append(c.idHashes, h)
	}
}

func (c *colAcc) tryDate(t, raw string) bool {
	if !parseDatetime(t, &c.scratch) {
		return false
	}
	c.addKind(kDate, raw)
	c.dt.add(c.scratch, raw)
	return true
}

func (c *colAcc) addKind(k kind, s string) {
	c.kinds[k]++
	if ex := c.examples[k]; len(ex) < examplesPerKind && !slices.Contains(ex, s) {
		c.examples[k] = append(ex, strings.Clone(truncateRunes(s, 60)))
	}
}

func (c *colAcc) addLen(s string) {
	n := utf8.RuneCountInString(s)
	if c.minLen < 0 || n < c.minLen {
		c.minLen = n
	}
	if n > c.maxLen {
		c.maxLen = n
	}
}

// parseInt is strconv.ParseInt for base 10 with a fast path for the common
// case; "+5" and "-5" are ints, "05" too (pandas reads it as 5).
func parseInt(s string) (int64, bool) {
	i, neg := 0, false
	if s[0] == '-' || s[0] == '+' {
		neg, i = s[0] == '-', 1
	}
	if i == len(s) || len(s)-i > 18 {
		if len(s)-i > 18 {
			v, err := strconv.ParseInt(s, 10, 64)
			return v, err == nil
		}
		return 0, false
	}
	var v int64
	for ; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// pow10 are the powers of ten that float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseFloat accepts decimal floats as pandas does: not Go's hex floats or
// digit separators.
func parseFloat(s string) (float64, bool) {
	// Fast path for plain decimals ("1234.56") of at most 15 digits: the
	// digits are an exact float64 and so is 10^frac, so one division
	// rounds correctly (Clinger's fast path, as strconv takes it too).
	i, neg := 0, false
	if s[0] == '-' || s[0] == '+' {
		neg, i = s[0] == '-', 1
	}
	var m uint64
	digits, frac, dot := 0, 0, false
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case isDigit(c):
			m = m*10 + uint64(c-'0')
			digits++
			if dot {
				frac++
			}
		case c == '.' && !dot:
			dot = true
		case c == 'e' || c == 'E':
			digits = 99 // an exponent: take the slow path
			i = len(s)
		default:
			return 0, false // "2024-01-05", "1,5", "12%": not a float
		}
	}
	if digits > 0 && digits <= 15 {
		f := float64(m) / pow10[frac]
		if neg {
			f = -f
		}
		return f, true
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case isDigit(c), c == '.', c == '-', c == '+', c == 'e', c == 'E':
		default:
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		// Out of range still reads (as ±Inf or 0), as in pandas.
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, true
		}
		return 0, false
	}
	return f, true
}

// infinity reads the spellings of infinity that pandas reads as floats.
func infinity(s string) (float64, bool) {
	sign := 1
	switch s[0] {
	case '-':
		sign, s = -1, s[1:]
	case '+':
		s = s[1:]
	}
	switch s {
	case "inf", "Inf", "INF", "infinity", "Infinity", "INFINITY":
		return math.Inf(sign), true
	}
	return 0, false
}

// idishName: "id", "uuid", "order_id", "orderId", "customer key", "sku".
func idishName(name string) bool {
	n := strings.ToLower(strings.TrimSpace(name))
	switch n {
	case "id", "uuid", "guid", "key", "pk", "sku", "index", "idx":
		return true
	}
	for _, suf := range []string{"_id", " id", "-id", ".id", "_key", " key", "_uuid", "_guid", "_no", "_number", "_code"} {
		if strings.HasSuffix(n, suf) {
			return true
		}
	}
	// camelCase: orderId, OrderID.
	if len(name) > 2 && (strings.HasSuffix(name, "Id") || strings.HasSuffix(name, "ID")) {
		c := name[len(name)-3]
		return c >= 'a' && c <= 'z'
	}
	return false
}

// profile turns the accumulator into a ColumnProfile.
func (c *colAcc) profile() *ColumnProfile {
	cp := &ColumnProfile{Name: c.name, Nulls: c.nulls, Nested: c.nested}
	numbersAsText := c.kinds[kFloat]+c.kinds[kBool]+c.kinds[kDate] == 0
	// Every text value grouped in threes ("1,234", "12,500"): a thousands
	// separator, not a decimal comma, which would read 1,234 as 1.234.
	cp.ThousandsComma = c.thousandsComma > 0 && c.thousandsComma == c.kinds[kString] && numbersAsText
	cp.DecimalComma = !cp.ThousandsComma && c.decimalComma > 0 && c.decimalComma == c.kinds[kString] && numbersAsText
	present := c.countKinds(cp)
	cp.Type = c.columnType(cp.Count, present)
	if present < 2 || cp.Type != TypeString {
		cp.Examples = nil // nothing mixed to explain
	}
	c.countDistinct(cp)
	cp.Unique = cp.DistinctExact && cp.Distinct == cp.Count && cp.Count > 1
	cp.IDLike = cp.Unique && cp.Nulls == 0 && idishName(c.name) && (cp.Type == TypeInt || cp.Type == TypeString)
	switch cp.Type {
	case TypeInt, TypeFloat:
		if cp.Type == TypeInt && cp.DistinctExact && cp.Distinct <= 10 && !cp.Unique {
			cp.Top = c.dist.top(topValuesShown)
		}
	case TypeDatetime:
		cp.Time = c.dt.stats()
	case TypeString, TypeBool:
		if cp.DistinctExact && cp.Distinct <= topValuesMaxDistinct && !cp.Unique {
			cp.Top = c.dist.top(topValuesShown)
		}
	}
	if c.kinds[kString] > 0 {
		cp.MinLen, cp.MaxLen = max(c.minLen, 0), c.maxLen
	}
	return cp
}

// countKinds fills cp's Count, Kinds and Examples and says how many kinds
// of value the column holds.
func (c *colAcc) countKinds(cp *ColumnProfile) (present int) {
	for k := kind(0); k < numKinds; k++ {
		cp.Count += c.kinds[k]
		if c.kinds[k] > 0 {
			present++
			if cp.Kinds == nil {
				cp.Kinds = map[ColumnType]int{}
				cp.Examples = map[ColumnType][]string{}
			}
			cp.Kinds[kindTypes[k]] = c.kinds[k]
			cp.Examples[kindTypes[k]] = c.examples[k]
		}
	}
	return present
}

// columnType is the column's type from the kinds of its count values:
// numbers mix into float, anything else mixed is a string.
func (c *colAcc) columnType(count, present int) ColumnType {
	numeric := c.kinds[kInt] + c.kinds[kFloat]
	switch {
	case count == 0:
		return TypeNull
	case numeric == count && c.kinds[kFloat] == 0:
		return TypeInt
	case numeric == count:
		return TypeFloat
	case present == 1 && c.kinds[kBool] > 0:
		return TypeBool
	case present == 1 && c.kinds[kDate] > 0:
		return TypeDatetime
	}
	return TypeString
}

// countDistinct fills cp's Distinct and DistinctExact (and Num for a
// numeric column), exactly where the column's values allow.
func (c *colAcc) countDistinct(cp *ColumnProfile) {
	cp.Distinct, cp.DistinctExact = c.dist.count()
	if c.trackID && len(c.idHashes) == cp.Count && cp.Count > 0 {
		slices.Sort(c.idHashes)
		u := 1
		for i := 1; i < len(c.idHashes); i++ {
			if c.idHashes[i] != c.idHashes[i-1] {
				u++
			}
		}
		cp.Distinct, cp.DistinctExact = u, true
		c.idHashes = nil
	}
	if cp.Type == TypeInt || cp.Type == TypeFloat {
		cp.Num = c.num.stats()
		if cp.Num.distinct > 0 { // every value was kept: count exactly
			cp.Distinct, cp.DistinctExact = cp.Num.distinct, true
		}
	}
	if cp.Type == TypeInt && c.num.strictlyIncr && !cp.DistinctExact {
		cp.Distinct, cp.DistinctExact = cp.Count, true
	}
}

func truncateRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + "…"
		}
		i++
	}
	return s
}
