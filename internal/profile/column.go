package profile

import (
	"cmp"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
)

// Memory bounds. Each is per sample and chosen so that a wide file stays
// within a few hundred MiB at the default row cap.
const (
	// storedValuesBudget is how many numeric values are kept for exact
	// medians, shared by a sample's columns (8 bytes each: 64 MiB). A column
	// past its share keeps a seeded uniform sample instead.
	storedValuesBudget = 8 << 20
	minStoredPerColumn = 1 << 16
	// exactDistinctKeys bounds a column's exact set of value hashes; past
	// it, distinct counts come from HyperLogLog.
	exactDistinctKeys = 1 << 14
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
	// decimalComma counts string values that are numbers with a decimal comma.
	decimalComma int
}

func newColAcc(name string, storeLimit int, seed uint64, idx int) *colAcc {
	c := &colAcc{name: name, minLen: -1}
	c.num.init(storeLimit, seed, idx)
	c.dist.exact = map[uint64]int32{}
	c.trackID = idishName(name)
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
}

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

// numAcc accumulates numeric statistics over int and float values.
type numAcc struct {
	n              int
	allInt         bool
	imin, imax     int64
	fmin, fmax     float64
	sumHi, sumLo   uint64  // exact int128 sum while allInt
	fsum, fcomp    float64 // Neumaier-compensated sum of all values
	mean, m2       float64 // Welford, for the standard deviation
	ints           []int64 // stored values while allInt
	flts           []float64
	limit          int
	sampled        bool
	rng            *rand.Rand
	seed           uint64
	idx            int
	strictlyIncr   bool // ints so far strictly increase: unique without a hash set
	last           int64
	haveLast       bool
	hasNaN, hasInf bool
}

func (a *numAcc) init(limit int, seed uint64, idx int) {
	a.allInt, a.limit, a.seed, a.idx, a.strictlyIncr = true, limit, seed, idx, true
}

func (a *numAcc) addInt(v int64) {
	a.n++
	if a.n == 1 {
		a.imin, a.imax, a.fmin, a.fmax = v, v, float64(v), float64(v)
	} else {
		a.imin, a.imax = min(a.imin, v), max(a.imax, v)
		a.fmin, a.fmax = min(a.fmin, float64(v)), max(a.fmax, float64(v))
	}
	if a.haveLast && v <= a.last {
		a.strictlyIncr = false
	}
	a.last, a.haveLast = v, true
	if a.allInt {
		var carry uint64
		a.sumLo, carry = bits.Add64(a.sumLo, uint64(v), 0)
		ext := uint64(0)
		if v < 0 {
			ext = math.MaxUint64
		}
		a.sumHi, _ = bits.Add64(a.sumHi, ext, carry)
		a.store(v, 0)
	} else {
		a.store(0, float64(v))
	}
	a.moments(float64(v))
}

func (a *numAcc) addFloat(f float64) {
	a.n++
	a.strictlyIncr = false
	if math.IsNaN(f) {
		a.hasNaN = true
	}
	if math.IsInf(f, 0) {
		a.hasInf = true
	}
	if a.n == 1 {
		a.fmin, a.fmax = f, f
	} else {
		a.fmin, a.fmax = min(a.fmin, f), max(a.fmax, f)
	}
	if a.allInt {
		a.allInt = false
		a.flts = make([]float64, len(a.ints), max(cap(a.ints), 16))
		for i, v := range a.ints {
			a.flts[i] = float64(v)
		}
		a.ints = nil
	}
	a.store(0, f)
	a.moments(f)
}

func (a *numAcc) moments(x float64) {
	t := a.fsum + x
	if math.Abs(a.fsum) >= math.Abs(x) {
		a.fcomp += (a.fsum - t) + x
	} else {
		a.fcomp += (x - t) + a.fsum
	}
	a.fsum = t
	d := x - a.mean
	a.mean += d / float64(a.n)
	a.m2 += d * (x - a.mean)
}

// store keeps every value up to the limit, then a uniform reservoir sample
// (algorithm R) of limit values.
func (a *numAcc) store(iv int64, fv float64) {
	held := len(a.ints) + len(a.flts)
	if held < a.limit {
		if a.allInt {
			a.ints = append(a.ints, iv)
		} else {
			a.flts = append(a.flts, fv)
		}
		return
	}
	if !a.sampled {
		a.sampled = true
		a.rng = rand.New(rand.NewPCG(a.seed, uint64(a.idx)+0x9e3779b97f4a7c15))
	}
	j := a.rng.IntN(a.n)
	if j < a.limit {
		if a.allInt {
			a.ints[j] = iv
		} else {
			a.flts[j] = fv
		}
	}
}

func (a *numAcc) stats() *NumericStats {
	if a.n == 0 {
		return nil
	}
	st := &NumericStats{Min: a.fmin, Max: a.fmax, MedianExact: !a.sampled}
	if a.allInt {
		st.IntMin, st.IntMax = a.imin, a.imax
		// int128 to float64: exact to float64's precision.
		hi := int64(a.sumHi)
		st.Mean = (float64(hi)*0x1p64 + float64(a.sumLo)) / float64(a.n)
	} else {
		st.Mean = (a.fsum + a.fcomp) / float64(a.n)
	}
	if a.n > 1 {
		st.Std = math.Sqrt(a.m2 / float64(a.n-1))
	}
	if a.hasInf {
		// Infinite values: the mean is ±Inf (NaN when both signs occur) and
		// the spread is undefined, as in pandas.
		st.Mean, st.Std = a.fsum, math.NaN()
	}
	if a.sampled {
		st.MedianSample = a.limit
	}
	if a.allInt {
		st.Median = medianInts(a.ints)
	} else {
		st.Median = medianFloats(a.flts)
	}
	return st
}

// medianInts and medianFloats select in place (the slices are scratch by now).
func medianInts(v []int64) float64 {
	n := len(v)
	if n == 0 {
		return math.NaN()
	}
	hi := quickselect(v, n/2)
	if n%2 == 1 {
		return float64(hi)
	}
	lo := slices.Max(v[:n/2])
	return float64(lo) + (float64(hi)-float64(lo))/2
}

func medianFloats(v []float64) float64 {
	// NaN has no rank; pandas' median skips it too.
	v = slices.DeleteFunc(v, math.IsNaN)
	n := len(v)
	if n == 0 {
		return math.NaN()
	}
	hi := quickselect(v, n/2)
	if n%2 == 1 {
		return hi
	}
	lo := slices.Max(v[:n/2])
	return lo + (hi-lo)/2
}

// quickselect puts the k-th smallest element at v[k], smaller ones before it,
// and returns it. Median-of-three pivots, deterministic.
func quickselect[T cmp.Ordered](v []T, k int) T {
	lo, hi := 0, len(v)-1
	for hi-lo > 16 {
		mid := lo + (hi-lo)/2
		if v[mid] < v[lo] {
			v[mid], v[lo] = v[lo], v[mid]
		}
		if v[hi] < v[lo] {
			v[hi], v[lo] = v[lo], v[hi]
		}
		if v[hi] < v[mid] {
			v[hi], v[mid] = v[mid], v[hi]
		}
		p := v[mid]
		i, j := lo, hi
		for i <= j {
			for v[i] < p {
				i++
			}
			for p < v[j] {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return v[k]
		}
	}
	slices.Sort(v[lo : hi+1])
	return v[k]
}

// dtAcc accumulates datetime readings.
type dtAcc struct {
	n       int
	fit     [numDatePats]int // values each date part reads
	first   [numDatePats]int // values whose preferred reading is this date part
	min     [numDatePats]instant
	max     [numDatePats]instant
	minText [numDatePats]string
	maxText [numDatePats]string
	shapes  [numShapes]int
	frac    bool
	// Range over every value's preferred reading, for mixed formats.
	gmin, gmax         instant
	gminText, gmaxText string
}

func (d *dtAcc) add(p dtParse, text string) {
	d.n++
	d.first[p.pats[0]]++
	if d.n == 1 || p.at[0].before(d.gmin) {
		d.gmin, d.gminText = p.at[0], strings.Clone(text)
	}
	if d.n == 1 || d.gmax.before(p.at[0]) {
		d.gmax, d.gmaxText = p.at[0], strings.Clone(text)
	}
	key := p.shape &^ tsFrac
	d.shapes[key]++
	if p.shape&tsFrac != 0 {
		d.frac = true
	}
	for i := 0; i < p.n; i++ {
		pat, at := p.pats[i], p.at[i]
		d.fit[pat]++
		if d.fit[pat] == 1 || at.before(d.min[pat]) {
			d.min[pat], d.minText[pat] = at, strings.Clone(text)
		}
		if d.fit[pat] == 1 || d.max[pat].before(at) {
			d.max[pat], d.maxText[pat] = at, strings.Clone(text)
		}
	}
}

func (d *dtAcc) stats() *DatetimeStats {
	if d.n == 0 {
		return nil
	}
	// The most common time shape; fractions are optional within it.
	shape := timeShape(0)
	for s, n := range d.shapes {
		if n > d.shapes[shape] {
			shape = timeShape(s)
		}
	}
	if d.frac {
		shape |= tsFrac
	}
	st := &DatetimeStats{Zoned: shape&tsZone != 0}
	var full []datePat
	for p := datePat(0); p < numDatePats; p++ {
		if d.fit[p] == d.n {
			full = append(full, p)
		}
	}
	if len(full) > 0 {
		p := full[0] // table order puts pandas' default reading first
		st.Layout, st.Strftime = layoutOf(p, shape)
		st.ISO = p == patISO && (shape&tsTime == 0 || shape&tsAMPM == 0)
		for _, q := range full[1:] {
			l, _ := layoutOf(q, shape)
			st.Ambiguous = append(st.Ambiguous, l)
		}
		st.Min, st.Max = d.minText[p], d.maxText[p]
		return st
	}
	// No single date part reads every value: report each with its count,
	// and the range under each value's preferred reading.
	var best datePat
	for p := datePat(0); p < numDatePats; p++ {
		if d.first[p] == 0 {
			continue
		}
		l, f := layoutOf(p, shape)
		st.Mixed = append(st.Mixed, LayoutCount{Layout: l, Strftime: f, Count: d.first[p]})
		if d.first[p] > d.first[best] {
			best = p
		}
	}
	slices.SortStableFunc(st.Mixed, func(a, b LayoutCount) int { return b.Count - a.Count })
	st.Layout, st.Strftime = layoutOf(best, shape)
	st.Min, st.Max = d.gminText, d.gmaxText
	return st
}

// distinctAcc counts distinct values by their 64-bit hash: exactly up to
// a bound, then with HyperLogLog. It keeps the text and count of the first
// few distinct values only, which is all that top values need.
type distinctAcc struct {
	exact  map[uint64]int32 // value hash -> index into counts
	counts []int
	values []string // the first topValuesMaxDistinct+1 distinct values
	hll    *hll
	// recent is a direct-mapped cache in front of exact: low-cardinality
	// columns, the common case, then skip the map lookup.
	recent *[distinctCacheSize]struct {
		h uint64
		i int32
	}
}

const distinctCacheSize = 256

func (d *distinctAcc) add(h uint64, s string) {
	if d.exact != nil {
		if d.recent == nil {
			d.recent = new([distinctCacheSize]struct {
				h uint64
				i int32
			})
		}
		slot := &d.recent[h%distinctCacheSize]
		if slot.h == h && slot.i > 0 {
			d.counts[slot.i-1]++
			return
		}
		if i, ok := d.exact[h]; ok {
			d.counts[i]++
			slot.h, slot.i = h, i+1
			return
		}
		if len(d.exact) < exactDistinctKeys {
			d.exact[h] = int32(len(d.counts))
			d.counts = append(d.counts, 1)
			if len(d.values) <= topValuesMaxDistinct {
				// Clone: s may be a slice of a whole CSV record.
				d.values = append(d.values, strings.Clone(truncateRunes(s, 4*topValueRunes)))
			}
			return
		}
		d.hll = newHLL()
		for k := range d.exact {
			d.hll.add(k)
		}
		d.exact, d.counts, d.values, d.recent = nil, nil, nil, nil
	}
	d.hll.add(h)
}

func (d *distinctAcc) count() (n int, exact bool) {
	if d.exact != nil {
		return len(d.exact), true
	}
	return int(d.hll.estimate() + 0.5), false
}

// top returns the most frequent values, most frequent first, ties by value.
func (d *distinctAcc) top(n int) []ValueCount {
	if d.exact == nil || len(d.values) < len(d.counts) {
		return nil
	}
	out := make([]ValueCount, len(d.values))
	for i, v := range d.values {
		out[i] = ValueCount{Value: v, Count: d.counts[i]}
	}
	slices.SortFunc(out, func(a, b ValueCount) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Value, b.Value)
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// profile turns the accumulator into a ColumnProfile.
func (c *colAcc) profile() *ColumnProfile {
	cp := &ColumnProfile{Name: c.name, Nulls: c.nulls, Nested: c.nested}
	cp.DecimalComma = c.decimalComma > 0 && c.decimalComma == c.kinds[kString] &&
		c.kinds[kFloat]+c.kinds[kBool]+c.kinds[kDate] == 0
	present := 0
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
	numeric := c.kinds[kInt] + c.kinds[kFloat]
	switch {
	case cp.Count == 0:
		cp.Type = TypeNull
	case numeric == cp.Count && c.kinds[kFloat] == 0:
		cp.Type = TypeInt
	case numeric == cp.Count:
		cp.Type = TypeFloat
	case present == 1 && c.kinds[kBool] > 0:
		cp.Type = TypeBool
	case present == 1 && c.kinds[kDate] > 0:
		cp.Type = TypeDatetime
	default:
		cp.Type = TypeString
	}
	if present < 2 || cp.Type != TypeString {
		cp.Examples = nil // nothing mixed to explain
	}
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
	if cp.Type == TypeInt && c.num.strictlyIncr && !cp.DistinctExact {
		cp.Distinct, cp.DistinctExact = cp.Count, true
	}
	cp.Unique = cp.DistinctExact && cp.Distinct == cp.Count && cp.Count > 1
	cp.IDLike = cp.Unique && cp.Nulls == 0 && c.trackID && (cp.Type == TypeInt || cp.Type == TypeString)
	switch cp.Type {
	case TypeInt, TypeFloat:
		cp.Num = c.num.stats()
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
