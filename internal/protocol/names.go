package protocol

import (
	"regexp"
	"strings"
)

var nameSeparatorsRe = regexp.MustCompile(`[-_.]+`)

// CanonicalName is the PEP 503 normal form of the distribution a
// requirement names: its name without extras, version specifier or marker,
// lower case, every run of "-", "_" and "." one "-" (re.sub(r"[-_.]+", "-",
// name).lower()). "A.B-c" and "a__b" become "a-b-c" and "a-b". Two
// requirements name the same distribution when their canonical names are
// equal.
func CanonicalName(req string) string {
	name := strings.TrimSpace(req)
	if i := strings.IndexAny(name, "[<>=!~;@ \t"); i >= 0 {
		name = name[:i]
	}
	return strings.ToLower(nameSeparatorsRe.ReplaceAllString(name, "-"))
}

// CanonicalNames is CanonicalName of each of reqs, empty ones left out.
func CanonicalNames(reqs []string) []string {
	out := make([]string, 0, len(reqs))
	for _, r := range reqs {
		if c := CanonicalName(r); c != "" {
			out = append(out, c)
		}
	}
	return out
}
