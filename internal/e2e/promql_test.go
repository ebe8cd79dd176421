package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// A careful reading of the PromQL the dashboards use, without depending on
// Prometheus's own parser (whose module pulls in most of Prometheus): it
// finds the series each expression selects, the label names its matchers
// and groupings name, and the functions it calls. The live test
// (TestDashboardsOnLiveStack) has the real Prometheus parse and run every
// expression, so what this misses that one catches.

// promQL is what an expression refers to.
type promQL struct {
	series    []string // metric names selected
	matchers  []string // label names in {...}
	groupings []string // label names in by/without/on/ignoring/group_left/group_right (...)
	functions []string // functions and aggregations called
}

// promFunctions are the functions and aggregation operators the dashboards may call.
var promFunctions = []string{"sum", "max", "min", "avg", "count", "topk", "bottomk", "rate", "irate", "increase",
	"histogram_quantile", "clamp_min", "clamp_max", "abs", "time", "vector", "scalar", "count_over_time",
	"max_over_time", "avg_over_time", "delta", "deriv", "label_replace", "ceil", "absent"}

var promKeywords = []string{"and", "or", "unless", "bool", "offset"}

var groupingWords = []string{"by", "without", "on", "ignoring", "group_left", "group_right"}

var (
	promStrings  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promRanges   = regexp.MustCompile(`\[[0-9smhdwy:]+\]`)
	promTokenRun = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*|[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?|=~|!~|!=|==|>=|<=|[(){},=<>+\-*/^%]`)
)

// parsePromQL reads expr, or says what in it it cannot read.
func parsePromQL(expr string) (promQL, error) {
	var q promQL
	stripped := promRanges.ReplaceAllString(promStrings.ReplaceAllString(expr, `""`), " ")
	if strings.ContainsAny(strings.ReplaceAll(stripped, `""`, ""), "\"'`[]$") {
		return q, fmt.Errorf("unbalanced quotes, an unknown range, or a Grafana variable in %q", expr)
	}
	rest := strings.ReplaceAll(stripped, `""`, " STRING ")
	toks := promTokenRun.FindAllString(rest, -1)
	if leftover := strings.TrimFunc(promTokenRun.ReplaceAllString(rest, ""), unicode.IsSpace); leftover != "" {
		return q, fmt.Errorf("unexpected %q in %q", leftover, expr)
	}
	depth := 0
	for i := 0; i < len(toks); i++ {
		tok, next := toks[i], ""
		if i+1 < len(toks) {
			next = toks[i+1]
		}
		switch {
		case tok == "(":
			depth++
		case tok == ")":
			depth--
		case tok == "{":
			end, labels, err := readMatchers(toks, i)
			if err != nil {
				return q, fmt.Errorf("%w in %q", err, expr)
			}
			q.matchers = append(q.matchers, labels...)
			i = end
		case slices.Contains(groupingWords, tok):
			end, labels, err := readGrouping(toks, i)
			if err != nil {
				return q, fmt.Errorf("%w in %q", err, expr)
			}
			q.groupings = append(q.groupings, labels...)
			i = end
		case !isIdent(tok) || tok == "STRING" || slices.Contains(promKeywords, tok):
		case next == "(" || (slices.Contains(promFunctions, tok) && slices.Contains(groupingWords, next)):
			if !slices.Contains(promFunctions, tok) {
				return q, fmt.Errorf("unknown function %q in %q", tok, expr)
			}
			q.functions = append(q.functions, tok)
		default:
			q.series = append(q.series, tok)
		}
		if depth < 0 {
			return q, fmt.Errorf("unbalanced parentheses in %q", expr)
		}
	}
	if depth != 0 {
		return q, fmt.Errorf("unbalanced parentheses in %q", expr)
	}
	return q, nil
}

// readMatchers reads {name op "value", ...} from toks[open]; it returns the
// index of the closing brace and the label names.
func readMatchers(toks []string, open int) (int, []string, error) {
	var labels []string
	for i := open + 1; i < len(toks); i += 4 {
		if toks[i] == "}" {
			return i, labels, nil
		}
		if i+3 >= len(toks) || !isIdent(toks[i]) || !slices.Contains([]string{"=", "!=", "=~", "!~"}, toks[i+1]) || toks[i+2] != "STRING" {
			return 0, nil, fmt.Errorf("a matcher that is not name op \"value\" at %q", strings.Join(toks[i:], " "))
		}
		labels = append(labels, toks[i])
		switch toks[i+3] {
		case ",":
		case "}":
			return i + 3, labels, nil
		default:
			return 0, nil, fmt.Errorf("unexpected %q after a matcher", toks[i+3])
		}
	}
	return 0, nil, fmt.Errorf("unclosed {")
}

// readGrouping reads by (a, b) from toks[word]; it returns the index of
// the closing parenthesis and the label names.
func readGrouping(toks []string, word int) (int, []string, error) {
	if word+1 >= len(toks) || toks[word+1] != "(" {
		if toks[word] == "group_left" || toks[word] == "group_right" {
			return word, nil, nil // without a label list
		}
		return 0, nil, fmt.Errorf("%s without a label list", toks[word])
	}
	var labels []string
	for i := word + 2; i < len(toks); i++ {
		switch {
		case toks[i] == ")":
			return i, labels, nil
		case toks[i] == ",":
		case isIdent(toks[i]):
			labels = append(labels, toks[i])
		default:
			return 0, nil, fmt.Errorf("unexpected %q in %s (...)", toks[i], toks[word])
		}
	}
	return 0, nil, fmt.Errorf("unclosed %s (", toks[word])
}

func isIdent(tok string) bool {
	r := rune(tok[0])
	return r == '_' || r == ':' || unicode.IsLetter(r)
}
