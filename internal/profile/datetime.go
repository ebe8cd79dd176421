package profile

import (
	"slices"
	"strings"
)

// Datetime detection. A hand-written parser rather than time.Parse over a
// list of layouts: a date column is read once per cell at a few tens of
// nanoseconds, and one pass learns every layout a value fits (01/02/2006
// fits month-first and day-first), which is what ambiguity needs.

// datePat is the date part of a layout.
type datePat uint8

const (
	patISO        datePat = iota // 2006-01-02
	patYMDSlash                  // 2006/01/02
	patMDYSlash                  // 01/02/2006 (pandas' reading of an ambiguous slash date)
	patDMYSlash                  // 02/01/2006
	patMDYDash                   // 01-02-2006
	patDMYDash                   // 02-01-2006
	patDMYDot                    // 02.01.2006
	patDMonY                     // 02-Jan-2006
	patDMonYSpace                // 2 Jan 2006
	patMonDY                     // Jan 2, 2006
	numDatePats
)

// datePats are the Go and strftime spellings of each date part.
var datePats = [numDatePats]struct{ layout, strftime string }{
	patISO:        {"2006-01-02", "%Y-%m-%d"},
	patYMDSlash:   {"2006/01/02", "%Y/%m/%d"},
	patMDYSlash:   {"01/02/2006", "%m/%d/%Y"},
	patDMYSlash:   {"02/01/2006", "%d/%m/%Y"},
	patMDYDash:    {"01-02-2006", "%m-%d-%Y"},
	patDMYDash:    {"02-01-2006", "%d-%m-%Y"},
	patDMYDot:     {"02.01.2006", "%d.%m.%Y"},
	patDMonY:      {"02-Jan-2006", "%d-%b-%Y"},
	patDMonYSpace: {"2 Jan 2006", "%d %b %Y"},
	patMonDY:      {"Jan 2, 2006", "%b %d, %Y"},
}

// timeShape is the time-of-day part of a layout, as bits.
type timeShape uint8

const (
	tsTime      timeShape = 1 << iota // a time of day follows the date
	tsT                               // separated by 'T' (else a space)
	tsSec                             // with seconds
	tsFrac                            // with fractional seconds (optional: not part of the shape key)
	tsZone                            // with "Z", a UTC offset, or " UTC"
	tsAMPM                            // 12-hour clock with AM/PM
	tsFullMonth                       // month names spelled out
	numShapes   = 1 << 7
)

// layoutOf spells a date part and time shape as a Go layout and a strftime format.
func layoutOf(p datePat, s timeShape) (goLayout, strftime string) {
	goLayout, strftime = datePats[p].layout, datePats[p].strftime
	if s&tsFullMonth != 0 {
		goLayout = replaceOnce(goLayout, "Jan", "January")
		strftime = replaceOnce(strftime, "%b", "%B")
	}
	if s&tsTime == 0 {
		return goLayout, strftime
	}
	sep := " "
	if s&tsT != 0 {
		sep = "T"
	}
	goLayout += sep
	strftime += sep
	if s&tsAMPM != 0 {
		goLayout += "3:04"
		strftime += "%I:%M"
	} else {
		goLayout += "15:04"
		strftime += "%H:%M"
	}
	if s&tsSec != 0 {
		goLayout += ":05"
		strftime += ":%S"
	}
	if s&tsFrac != 0 {
		goLayout += ".999999999"
		strftime += ".%f"
	}
	if s&tsAMPM != 0 {
		goLayout += " PM"
		strftime += " %p"
	}
	if s&tsZone != 0 {
		goLayout += "Z07:00"
		strftime += "%z"
	}
	return goLayout, strftime
}

func replaceOnce(s, old, repl string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + repl + s[i+len(old):]
		}
	}
	return s
}

// instant is a point in time, comparable without time.Time's weight.
type instant struct {
	sec  int64 // seconds since 1970-01-01 UTC (offsets applied)
	nsec int32
}

func (a instant) before(b instant) bool {
	return a.sec < b.sec || (a.sec == b.sec && a.nsec < b.nsec)
}

// dtParse is the result of parseDatetime: up to two readings of the date
// part (day-first and month-first) and one time part.
type dtParse struct {
	n     int
	pats  [2]datePat
	at    [2]instant
	shape timeShape
}

// dateReading is one reading of a date part as year, month and day.
type dateReading struct {
	pat     datePat
	y, m, d int
}

// dateReadings is what readDate found: one reading, or two when day and
// month may be either way round, and where the date part ends.
type dateReadings struct {
	rd  [2]dateReading
	n   int
	end int
}

// parseDatetime reads s under every supported layout at once.
func parseDatetime(s string, r *dtParse) bool {
	if len(s) < 6 || len(s) > 48 {
		return false
	}
	*r = dtParse{}
	var dr dateReadings
	if !readDate(s, &dr, r) {
		return false
	}
	secOfDay, nsec, off, ok := parseClock(s, dr.end, r)
	if !ok {
		return false
	}
	for _, x := range dr.rd[:dr.n] {
		if x.y < 1 || x.m < 1 || x.m > 12 || x.d < 1 || x.d > daysIn(x.y, x.m) {
			continue
		}
		r.pats[r.n] = x.pat
		r.at[r.n] = instant{sec: daysFromCivil(x.y, x.m, x.d)*86400 + secOfDay - off, nsec: nsec}
		r.n++
	}
	return r.n > 0
}

// readDate reads the date part at the start of s into dr, choosing the
// layout family by how s begins: a month name, a four-digit year, or a
// one- or two-digit day or month followed by its separator.
func readDate(s string, dr *dateReadings, r *dtParse) bool {
	c := s[0]
	if isLetter(c) {
		return readMonthDayYear(s, dr, r)
	}
	if !isDigit(c) {
		return false
	}
	a, j, ok := num(s, 0, 1, 4)
	if !ok || j >= len(s) {
		return false
	}
	if j == 4 {
		return readYearFirst(s, a, dr)
	}
	if j > 2 {
		return false
	}
	switch sep := s[j]; {
	case sep == '-' && j+1 < len(s) && isLetter(s[j+1]):
		return readDayMonthName(s, a, j, patDMonY, dr, r)
	case sep == ' ':
		return readDayMonthName(s, a, j, patDMonYSpace, dr, r)
	case sep == '/' || sep == '-' || sep == '.':
		return readNumericDayMonth(s, a, j, dr)
	}
	return false
}

// readYearFirst reads 2006-01-02 or 2006/01/02, whose year y is read.
func readYearFirst(s string, y int, dr *dateReadings) bool {
	sep := s[4]
	if sep != '-' && sep != '/' {
		return false
	}
	m, k, ok := num(s, 5, 1, 2)
	if !ok || k >= len(s) || s[k] != sep {
		return false
	}
	d, k, ok := num(s, k+1, 1, 2)
	if !ok {
		return false
	}
	pat := patISO
	if sep == '/' {
		pat = patYMDSlash
	}
	dr.rd[0], dr.n, dr.end = dateReading{pat, y, m, d}, 1, k
	return true
}

// readNumericDayMonth reads 01/02/2006, 01-02-2006 or 02.01.2006, whose
// first number a ends at s[j], the separator. Slash and dash dates are
// read both month-first and day-first.
func readNumericDayMonth(s string, a, j int, dr *dateReadings) bool {
	sep := s[j]
	b, k, ok := num(s, j+1, 1, 2)
	if !ok || k >= len(s) || s[k] != sep {
		return false
	}
	y, k, ok := num(s, k+1, 4, 4)
	if !ok {
		return false
	}
	dr.end = k
	switch sep {
	case '/':
		dr.rd[0], dr.rd[1], dr.n = dateReading{patMDYSlash, y, a, b}, dateReading{patDMYSlash, y, b, a}, 2
	case '-':
		dr.rd[0], dr.rd[1], dr.n = dateReading{patMDYDash, y, a, b}, dateReading{patDMYDash, y, b, a}, 2
	default:
		dr.rd[0], dr.n = dateReading{patDMYDot, y, b, a}, 1
	}
	return true
}

// readDayMonthName reads 02-Jan-2006 or 2 Jan 2006 (pat says which), whose
// day d ends at s[j], the separator.
func readDayMonthName(s string, d, j int, pat datePat, dr *dateReadings, r *dtParse) bool {
	sep := s[j]
	mon, k, full, ok := monthName(s, j+1)
	if !ok || k >= len(s) || s[k] != sep {
		return false
	}
	y, k, ok := num(s, k+1, 4, 4)
	if !ok {
		return false
	}
	if full {
		r.shape |= tsFullMonth
	}
	dr.rd[0], dr.n, dr.end = dateReading{pat, y, mon, d}, 1, k
	return true
}

// readMonthDayYear reads Jan 2, 2006.
func readMonthDayYear(s string, dr *dateReadings, r *dtParse) bool {
	mon, k, full, ok := monthName(s, 0)
	if !ok || k >= len(s) || s[k] != ' ' {
		return false
	}
	d, k, ok := num(s, k+1, 1, 2)
	if !ok || k+1 >= len(s) || s[k] != ',' || s[k+1] != ' ' {
		return false
	}
	y, k, ok := num(s, k+2, 4, 4)
	if !ok {
		return false
	}
	if full {
		r.shape |= tsFullMonth
	}
	dr.rd[0], dr.n, dr.end = dateReading{patMonDY, y, mon, d}, 1, k
	return true
}

// parseClock reads an optional time of day at s[i:] to the end of s: the
// 'T' or space before it, hours and minutes, then optional seconds (with
// a fraction), AM/PM and zone, each read by its own helper.
func parseClock(s string, i int, r *dtParse) (secOfDay int64, nsec int32, off int64, ok bool) {
	if i == len(s) {
		return 0, 0, 0, true
	}
	switch s[i] {
	case 'T':
		r.shape |= tsTime | tsT
	case ' ':
		r.shape |= tsTime
	default:
		return 0, 0, 0, false
	}
	h, j, ok := num(s, i+1, 1, 2)
	if !ok || j >= len(s) || s[j] != ':' {
		return 0, 0, 0, false
	}
	m, j, ok := num(s, j+1, 2, 2)
	if !ok || m > 59 {
		return 0, 0, 0, false
	}
	sec := 0
	if j < len(s) && s[j] == ':' {
		if sec, nsec, j, ok = readSeconds(s, j+1, r); !ok {
			return 0, 0, 0, false
		}
	}
	if h, j, ok = readMeridiem(s, j, h, r); !ok || h > 23 {
		return 0, 0, 0, false
	}
	if j < len(s) {
		if off, j, ok = readZone(s, j); !ok {
			return 0, 0, 0, false
		}
		r.shape |= tsZone
	}
	if j != len(s) {
		return 0, 0, 0, false
	}
	return int64(h*3600 + m*60 + sec), nsec, off, true
}

// readSeconds reads the seconds at s[i:] (after the ':') and an optional
// fraction after '.' or ','.
func readSeconds(s string, i int, r *dtParse) (sec int, nsec int32, j int, ok bool) {
	if sec, j, ok = num(s, i, 2, 2); !ok || sec > 60 {
		return 0, 0, j, false
	}
	r.shape |= tsSec
	if j < len(s) && (s[j] == '.' || s[j] == ',') {
		if nsec, j, ok = readFraction(s, j+1); !ok {
			return 0, 0, j, false
		}
		r.shape |= tsFrac
	}
	return sec, nsec, j, true
}

// readFraction reads the digits of a fraction of a second at s[i:] as
// nanoseconds; digits beyond nanoseconds are dropped.
func readFraction(s string, i int) (nsec int32, j int, ok bool) {
	k := i
	var f, digits int32
	for k < len(s) && isDigit(s[k]) && digits < 9 {
		f = f*10 + int32(s[k]-'0')
		digits++
		k++
	}
	if digits == 0 {
		return 0, k, false
	}
	for k < len(s) && isDigit(s[k]) {
		k++
	}
	for d := digits; d < 9; d++ {
		f *= 10
	}
	return f, k, true
}

// readMeridiem reads an optional AM/PM at s[j:] ("3:04 PM", "3:04PM") and
// turns the hour h to a 24-hour one; without one, h and j are returned as
// they are.
func readMeridiem(s string, j, h int, r *dtParse) (hour, end int, ok bool) {
	k := j
	if k < len(s) && s[k] == ' ' {
		k++
	}
	if k+2 > len(s) || (s[k+1] != 'M' && s[k+1] != 'm') || (s[k] != 'A' && s[k] != 'a' && s[k] != 'P' && s[k] != 'p') {
		return h, j, true
	}
	if h < 1 || h > 12 {
		return h, j, false
	}
	pm := s[k] == 'P' || s[k] == 'p'
	h %= 12
	if pm {
		h += 12
	}
	r.shape |= tsAMPM
	return h, k + 2, true
}

// readZone reads a zone at s[j:]: "Z", "+07:00", "+0700", "+07", optionally
// after a space, or " UTC"; off is the UTC offset in seconds.
func readZone(s string, j int) (off int64, end int, ok bool) {
	k := j
	if s[k] == ' ' {
		k++
	}
	switch {
	case k < len(s) && s[k] == 'Z' && k == j:
		return 0, k + 1, true
	case k < len(s) && (s[k] == '+' || s[k] == '-'):
		oh, e, ok := num(s, k+1, 2, 2)
		if !ok || oh > 23 {
			return 0, e, false
		}
		om := 0
		if e < len(s) && s[e] == ':' {
			e++
		}
		if e < len(s) {
			if om, e, ok = num(s, e, 2, 2); !ok || om > 59 {
				return 0, e, false
			}
		}
		off = int64(oh*3600 + om*60)
		if s[k] == '-' {
			off = -off
		}
		return off, e, true
	case s[k:] == "UTC" || s[k:] == "GMT":
		return 0, len(s), true
	}
	return 0, j, false
}

// num reads between minD and maxD decimal digits at s[i:]; the digit after
// them, if any, must not be a digit.
func num(s string, i, minD, maxD int) (v, j int, ok bool) {
	j = i
	for j < len(s) && j-i < maxD && isDigit(s[j]) {
		v = v*10 + int(s[j]-'0')
		j++
	}
	if j-i < minD || (j < len(s) && isDigit(s[j])) {
		return 0, j, false
	}
	return v, j, true
}

var monthNames = [12]string{"january", "february", "march", "april", "may", "june",
	"july", "august", "september", "october", "november", "december"}

// monthName reads an English month name, abbreviated ("Jan", "Sept") or in
// full, in any case, at s[i:].
func monthName(s string, i int) (month, j int, full, ok bool) {
	j = i
	for j < len(s) && isLetter(s[j]) {
		j++
	}
	w := s[i:j]
	if len(w) < 3 {
		return 0, j, false, false
	}
	for m, name := range monthNames {
		if !equalFoldASCII(w[:3], name[:3]) {
			continue
		}
		switch {
		case len(w) == 3:
			return m + 1, j, false, true
		case equalFoldASCII(w, name):
			return m + 1, j, len(name) > 3, true
		case m == 8 && equalFoldASCII(w, "sept"):
			return 9, j, false, true
		}
	}
	return 0, j, false, false
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i]|0x20, b[i]|0x20
		if x != y {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is days since 1970-01-01 of a proleptic Gregorian date
// (H. Hinnant's algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
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

// shapeCount is how many time shapes the values have.
func (d *dtAcc) shapeCount() int {
	n := 0
	for _, c := range d.shapes {
		if c > 0 {
			n++
		}
	}
	return n
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
	if len(full) > 0 && full[0] != patISO && d.shapeCount() > 1 {
		// One date part, several time shapes (2024/01/05 and
		// 2024/01/05 14:30): no one format reads them all, so each is told
		// with its count, as mixed formats are.
		p := full[0]
		for s, n := range d.shapes {
			if n == 0 {
				continue
			}
			ts := timeShape(s)
			if d.frac && ts&tsTime != 0 {
				ts |= tsFrac
			}
			l, f := layoutOf(p, ts)
			st.Mixed = append(st.Mixed, LayoutCount{Layout: l, Strftime: f, Count: n})
		}
		slices.SortStableFunc(st.Mixed, func(a, b LayoutCount) int { return b.Count - a.Count })
		st.Min, st.Max = d.minText[p], d.maxText[p]
		return st
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
