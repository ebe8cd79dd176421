package profile

import (
	"regexp"
	"strconv"
	"strings"
)

// CheckType is the kind of a check; the names match the `constraint` LLM
// call's check_type (Contract 3 (docs/contracts.md)), plus unique.
type CheckType string

// The check types.
const (
	CheckGreaterThan CheckType = "greater_than" // > Value, or >= with Inclusive
	CheckLessThan    CheckType = "less_than"    // < Value, or <= with Inclusive
	CheckBetween     CheckType = "between"      // Min..Max, ends included with Inclusive
	CheckRegex       CheckType = "regex"        // matches Pattern (Python re, anchored at the start)
	CheckIsin        CheckType = "isin"         // one of Values
	CheckNotNull     CheckType = "not_null"
	CheckUnique      CheckType = "unique"
	CheckNone        CheckType = "none" // not understood
)

// Check is a constraint on one column, in a form a schema can enforce.
type Check struct {
	Column    string    `json:"column"`
	Type      CheckType `json:"type"`
	Value     float64   `json:"value,omitempty"`
	Min       float64   `json:"min,omitempty"`
	Max       float64   `json:"max,omitempty"`
	Pattern   string    `json:"pattern,omitempty"`
	Values    []string  `json:"values,omitempty"` // as written; numeric in the schema when the column is
	Inclusive bool      `json:"inclusive,omitempty"`
	Text      string    `json:"text,omitempty"` // the constraint it was read from
}

// Phrase tables for the parser. Alternations are tried longest first.
var (
	numberRe = `[-+]?[$€£]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+]?\.\d+|zero`

	// comparisons maps a phrase to (lower bound?, inclusive?).
	comparisons = map[string][2]bool{
		"greater than or equal to": {true, true}, "greater than or equal": {true, true},
		"greater or equal to": {true, true}, "more than or equal to": {true, true},
		"larger than or equal to": {true, true}, "bigger than or equal to": {true, true},
		"at least": {true, true}, "minimum of": {true, true}, "minimum": {true, true},
		"min": {true, true}, ">=": {true, true}, "≥": {true, true}, "=>": {true, true},
		"greater than": {true, false}, "more than": {true, false}, "larger than": {true, false},
		"bigger than": {true, false}, "higher than": {true, false}, "above": {true, false},
		"over": {true, false}, "exceeds": {true, false}, "exceed": {true, false},
		"strictly greater than": {true, false}, ">": {true, false},
		"less than or equal to": {false, true}, "less than or equal": {false, true},
		"less or equal to": {false, true}, "smaller than or equal to": {false, true},
		"lower than or equal to": {false, true}, "at most": {false, true},
		"maximum of": {false, true}, "maximum": {false, true}, "max": {false, true},
		"up to": {false, true}, "<=": {false, true}, "≤": {false, true}, "=<": {false, true},
		"less than": {false, false}, "fewer than": {false, false}, "smaller than": {false, false},
		"lower than": {false, false}, "below": {false, false}, "under": {false, false},
		"strictly less than": {false, false}, "<": {false, false},
	}
	comparisonRe = regexp.MustCompile(`(?:^|[^\pL\pN_<>=≤≥])(` + alternation(comparisons) + `)\s*(?:of\s+)?(` + numberRe + `)(%?)`)
	// negationRe: "must not be", "cannot", "no" right before a comparison flips it.
	negationRe = regexp.MustCompile(`(?:\bnot|\bnever|n't|\bcannot|\bno)\s+(?:be\s+|go\s+|to\s+be\s+)?$`)

	signWordsRe = regexp.MustCompile(`\b(strictly positive|non-negative|nonnegative|non negative|not negative|zero or positive|positive or zero|zero or greater|zero or more|non-positive|nonpositive|non positive|not positive|zero or negative|negative or zero|zero or less|positive|negative)\b`)

	betweenRe = regexp.MustCompile(`\b(?:between|from|range(?:\s+of)?|in\s+the\s+range(?:\s+of)?|in\s+range(?:\s+of)?|within)\s*[\[(]?\s*(` + numberRe + `)\s*(?:and|to|-|–|,|\.\.)\s*(` + numberRe + `)\s*([\])])?`)
	chainRe   = regexp.MustCompile(`(` + numberRe + `)\s*(<=|<|≤)\s*(<=|<|≤)\s*(` + numberRe + `)`)

	isinKeyRe  = regexp.MustCompile(`\b(?:one of|any of|either|among|only|allowed values(?: are)?|valid values(?: are)?|possible values(?: are)?|values?(?: are)?(?: limited to)?|in)\s*:?\s*([\[({].*|.*)$`)
	isinListRe = regexp.MustCompile(`\b(?:one of|any of|either|among|allowed values|valid values|possible values|limited to)\b|\bin\s*[\[({]|\bonly\s+["'\x60]`)

	regexKeyRe = regexp.MustCompile(`\b(?:match|matches|matching|pattern|regex|regexp|regular expression|format)\b`)
	notNullRe  = regexp.MustCompile(`\b(?:not null|non-null|non null|not be null|never null|not be empty|not empty|non-empty|nonempty|required|mandatory|must be present|must be set|always present|always set|not be missing|never missing|not missing|cannot be (?:null|empty|missing|blank)|can't be (?:null|empty|missing|blank)|no (?:missing|null|empty|blank)(?: values)?|no nulls|must have a value|must not be blank)\b`)
	uniqueRe   = regexp.MustCompile(`\b(?:unique|no duplicates?|not be duplicated|never duplicated|without duplicates|distinct|must not repeat|no repeated)\b`)
	subjectRe  = regexp.MustCompile(`(?i)^\s*(?:the\s+)?(?:column\s+|field\s+)?["'\x60]?([\pL_][\pL\pN_ \-]*?)["'\x60]?\s+(?:must|should|shall|has to|have to|needs? to|is|are|cannot|can't|may not|values?|column|field)\b`)
	quotedRe   = regexp.MustCompile(`"[^"]*"|'[^']*'|\x60[^\x60]*\x60`)
	listSepRe  = regexp.MustCompile(`\s*(?:,|;|\bor\b|\band\b|\|)\s*`)
)

func alternation(m map[string][2]bool) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// Longest first so that "greater than or equal to" beats "greater than".
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && (len(keys[j]) > len(keys[j-1]) || (len(keys[j]) == len(keys[j-1]) && keys[j] < keys[j-1])); j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	for i, k := range keys {
		keys[i] = regexp.QuoteMeta(k)
	}
	return strings.Join(keys, "|")
}

// ParseConstraint reads a natural-language constraint deterministically:
// positive / non-negative / negative, greater or less than X, at least / at
// most X, between A and B, one of [...] / in (...), matches /re/ or 'regex',
// not null / required, unique. The column is the one of columns named in the
// text (case-insensitive; underscores, spaces and hyphens alike); with no
// columns given, the subject of the sentence. It returns false, with Type
// CheckNone, for anything else (compound or cross-column rules), so the
// caller can ask the model or keep the text as guidance.
func ParseConstraint(text string, columns []string) (Check, bool) {
	c := Check{Type: CheckNone, Text: text}
	s := strings.TrimSpace(text)
	s = strings.TrimRight(s, ".;!")
	if s == "" {
		return c, false
	}
	col, rest, ok := findColumn(s, columns)
	if !ok {
		return c, false
	}
	c.Column = col
	lower := asciiLower(rest)

	// A pattern first: its text may contain anything.
	if regexKeyRe.MatchString(lower) {
		if p, ok := extractPattern(rest, lower); ok {
			c.Type, c.Pattern = CheckRegex, p
			return c, true
		}
	}
	// Other rules see the text without quoted values (they may hold "and").
	unquoted := quotedRe.ReplaceAllStringFunc(lower, func(q string) string { return strings.Repeat("_", len(q)) })

	var found []Check
	if isinListRe.MatchString(unquoted) {
		if vals, ok := extractList(rest, lower); ok {
			found = append(found, Check{Type: CheckIsin, Values: vals})
		}
	}
	r, ok := rangeRule(unquoted)
	if !ok {
		return c, false
	}
	if r != nil {
		found = append(found, *r)
	}
	if r == nil || r.Type != CheckBetween {
		sign, ok := signRule(unquoted)
		if !ok {
			return c, false
		}
		if sign != nil {
			found = append(found, *sign)
		}
	}
	if notNullRe.MatchString(unquoted) {
		found = append(found, Check{Type: CheckNotNull})
	}
	if uniqueRe.MatchString(unquoted) {
		found = append(found, Check{Type: CheckUnique})
	}
	if len(found) != 1 {
		// Nothing, or several rules in one sentence: the model (or the
		// prompt) handles it better than a guess.
		return c, false
	}
	f := found[0]
	f.Column, f.Text = col, text
	return f, true
}

// rangeRule reads a numeric range from the unquoted text: "between A and
// B", a chain "A <= x < B", or comparisons ("greater than X", "at most
// Y"). It returns nil when there is none, and false when the text holds
// one that a single Check cannot express.
func rangeRule(unquoted string) (*Check, bool) {
	if m := betweenRe.FindStringSubmatch(unquoted); m != nil {
		lo, ok1 := parseNumber(m[1])
		hi, ok2 := parseNumber(m[2])
		if !ok1 || !ok2 || lo > hi {
			return nil, true
		}
		incl := !strings.Contains(unquoted, "exclusive") && !strings.Contains(unquoted, "strictly") && m[3] != ")"
		return &Check{Type: CheckBetween, Min: lo, Max: hi, Inclusive: incl}, true
	}
	if m := chainRe.FindStringSubmatch(unquoted); m != nil {
		lo, ok1 := parseNumber(m[1])
		hi, ok2 := parseNumber(m[4])
		inLo, inHi := m[2] != "<", m[3] != "<"
		if !ok1 || !ok2 || inLo != inHi {
			return nil, false // one end open, one closed: not expressible as one Check
		}
		return &Check{Type: CheckBetween, Min: lo, Max: hi, Inclusive: inLo}, true
	}
	return comparisonRule(unquoted)
}

// comparisonRule reads at most one lower and one upper bound from the
// comparisons in the unquoted text ("not" turns one round); both make a
// range.
func comparisonRule(unquoted string) (*Check, bool) {
	var lower, upper *Check
	for _, loc := range comparisonRe.FindAllStringSubmatchIndex(unquoted, -1) {
		phrase := unquoted[loc[2]:loc[3]]
		if unquoted[loc[6]:loc[7]] == "%" {
			return nil, false // a percentage of what? leave it to the model
		}
		v, ok := parseNumber(unquoted[loc[4]:loc[5]])
		if !ok {
			continue
		}
		dir := comparisons[phrase]
		isLower, incl := dir[0], dir[1]
		if negationRe.MatchString(unquoted[:loc[2]]) {
			isLower, incl = !isLower, !incl
		}
		ch := Check{Type: CheckLessThan, Value: v, Inclusive: incl}
		bound := &upper
		if isLower {
			ch.Type = CheckGreaterThan
			bound = &lower
		}
		if *bound != nil {
			return nil, false
		}
		*bound = &ch
	}
	switch {
	case lower != nil && upper != nil:
		if lower.Inclusive != upper.Inclusive || lower.Value > upper.Value {
			return nil, false
		}
		return &Check{Type: CheckBetween, Min: lower.Value, Max: upper.Value, Inclusive: lower.Inclusive}, true
	case lower != nil:
		return lower, true
	}
	return upper, true
}

// signRule reads one sign word ("positive", "non-negative", ...) from the
// unquoted text; more than one is ambiguous.
func signRule(unquoted string) (*Check, bool) {
	m := signWordsRe.FindAllString(unquoted, -1)
	switch len(m) {
	case 0:
		return nil, true
	case 1:
		neg := negationRe.MatchString(unquoted[:strings.Index(unquoted, m[0])])
		ch := signCheck(m[0], neg)
		return &ch, true
	}
	return nil, false
}

func signCheck(word string, negated bool) Check {
	switch word {
	case "positive", "strictly positive":
		if negated {
			return Check{Type: CheckLessThan, Value: 0, Inclusive: true}
		}
		return Check{Type: CheckGreaterThan, Value: 0}
	case "negative":
		if negated {
			return Check{Type: CheckGreaterThan, Value: 0, Inclusive: true}
		}
		return Check{Type: CheckLessThan, Value: 0}
	case "non-positive", "nonpositive", "non positive", "not positive", "zero or negative", "negative or zero", "zero or less":
		return Check{Type: CheckLessThan, Value: 0, Inclusive: true}
	}
	// non-negative and its spellings
	return Check{Type: CheckGreaterThan, Value: 0, Inclusive: true}
}

// findColumn finds the column named in s and returns s without that mention.
func findColumn(s string, columns []string) (col, rest string, ok bool) {
	if len(columns) == 0 {
		m := subjectRe.FindStringSubmatchIndex(s)
		if m == nil {
			// "no duplicate order ids", "no missing values in x": too free to guess.
			return "", "", false
		}
		name := strings.TrimSpace(s[m[2]:m[3]])
		return name, s[:m[2]] + " " + s[m[3]:], name != ""
	}
	masked := quotedRe.ReplaceAllStringFunc(s, func(q string) string { return strings.Repeat("\x00", len(q)) })
	bestLen, bestAt, bestEnd := 0, -1, -1
	seen := map[string]bool{}
	for _, name := range columns {
		words := strings.FieldsFunc(name, func(r rune) bool { return r == '_' || r == ' ' || r == '-' })
		if len(words) == 0 {
			continue
		}
		for i, w := range words {
			words[i] = regexp.QuoteMeta(w)
		}
		re, err := regexp.Compile(`(?i)(?:^|[^\pL\pN_])(` + strings.Join(words, `[\s_\-]+`) + `)(?:$|[^\pL\pN_])`)
		if err != nil {
			continue
		}
		loc := re.FindStringSubmatchIndex(masked)
		if loc == nil {
			// Also in quotes or backticks: "`unit_price` must be positive".
			loc = re.FindStringSubmatchIndex(strings.NewReplacer("`", " ", "\"", " ", "'", " ").Replace(s))
			if loc == nil {
				continue
			}
		}
		key := asciiLower(name)
		seen[key] = true
		l := loc[3] - loc[2]
		if l > bestLen || (l == bestLen && loc[2] < bestAt) {
			bestLen, bestAt, bestEnd, col = l, loc[2], loc[3], name
		}
	}
	if bestAt < 0 {
		return "", "", false
	}
	// A second, different column named outside the first mention means a
	// cross-column rule ("end_date after start_date").
	others := 0
	for k := range seen {
		if k != asciiLower(col) && !strings.Contains(asciiLower(col), k) {
			others++
		}
	}
	if others > 0 {
		return "", "", false
	}
	start, end := bestAt, bestEnd
	// Drop quotes around the mention.
	if start > 0 && end < len(s) && strings.ContainsRune("`\"'", rune(s[start-1])) && s[end] == s[start-1] {
		start, end = start-1, end+1
	}
	return col, s[:start] + " " + s[end:], true
}

// extractPattern finds the regular expression in a "matches ..." rule:
// between slashes, in quotes or backticks, or the word after the keyword.
func extractPattern(rest, lower string) (string, bool) {
	if i, j := strings.IndexByte(rest, '/'), strings.LastIndexByte(rest, '/'); i >= 0 && j > i+1 {
		return rest[i+1 : j], true
	}
	for _, q := range []byte{'`', '"', '\''} {
		if i := strings.IndexByte(rest, q); i >= 0 {
			if j := strings.LastIndexByte(rest, q); j > i+1 {
				return rest[i+1 : j], true
			}
		}
	}
	loc := regexKeyRe.FindAllStringIndex(lower, -1)
	if loc == nil {
		return "", false
	}
	tail := strings.TrimSpace(rest[loc[len(loc)-1][1]:])
	tail = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(tail, ":"), "the "))
	for _, w := range []string{"pattern", "regex", "regular expression", "expression"} {
		tail = strings.TrimSpace(strings.TrimPrefix(tail, w))
	}
	if tail == "" || strings.ContainsAny(tail, " \t") {
		return "", false
	}
	// A bare word ("format email") is not a pattern; regex syntax is.
	if !strings.ContainsAny(tail, `^$[]\()*+?{}|.`) {
		return "", false
	}
	return tail, true
}

// extractList reads the values of a "one of" rule: a bracketed list or the
// rest of the sentence, split on commas, "or" and "and"; quotes removed.
func extractList(rest, lower string) ([]string, bool) {
	m := isinKeyRe.FindStringSubmatchIndex(lower)
	if m == nil {
		return nil, false
	}
	// Prefer the first list keyword, not the last "in".
	if k := isinListRe.FindStringIndex(lower); k != nil {
		if mm := isinKeyRe.FindStringSubmatchIndex(lower[k[0]:]); mm != nil {
			for i := range mm {
				if mm[i] >= 0 {
					mm[i] += k[0]
				}
			}
			m = mm
		}
	}
	tail := strings.TrimSpace(rest[m[2]:m[3]])
	if i := strings.IndexByte(tail, ':'); i >= 0 && !quotedRe.MatchString(tail[:i]) {
		tail = strings.TrimSpace(tail[i+1:]) // "allowed values for status: a, b"
	}
	if tail == "" {
		return nil, false
	}
	if open := tail[0]; open == '[' || open == '(' || open == '{' {
		closeCh := map[byte]byte{'[': ']', '(': ')', '{': '}'}[open]
		if j := strings.LastIndexByte(tail, closeCh); j > 0 {
			tail = tail[1:j]
		} else {
			tail = tail[1:]
		}
	}
	var vals []string
	for _, q := range quotedRe.FindAllString(tail, -1) {
		vals = append(vals, q[1:len(q)-1])
	}
	if len(vals) == 0 {
		parts := listSepRe.Split(tail, -1)
		for _, p := range parts {
			p = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(p), "either "))
			if p != "" {
				vals = append(vals, p)
			}
		}
	}
	if len(vals) == 0 {
		return nil, false
	}
	return vals, true
}

func parseNumber(s string) (float64, bool) {
	if s == "zero" {
		return 0, true
	}
	s = strings.NewReplacer(",", "", "$", "", "€", "", "£", "").Replace(s)
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// asciiLower lower-cases ASCII letters only, so byte offsets stay valid
// for the original text.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
