package machine

import (
	"regexp"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/internal/pyscan"
	"github.com/autocoder/autocoder/pkg/messages"
)

// verdict is what the mechanical check can say about one suggested fix.
type verdict int

const (
	undecided  verdict = iota // only the model can tell: the verify stage
	applied                   // decided: the fix is in the new code
	notApplied                // decided: the fix is missing
)

func (v verdict) String() string {
	return [...]string{"undecided", "applied", "not applied"}[v]
}

// minSnippet is the shortest squashed snippet taken as evidence: shorter
// ones ("x", "0") occur anywhere by chance.
const minSnippet = 4

var (
	// "replace `a` with `b`", "change `a` to `b`", "`a` -> `b`": a is the
	// buggy snippet, b the fix.
	replaceRe = regexp.MustCompile("(?i)(?:replace|change|rewrite|turn)\\s+`([^`]+)`\\s+(?:with|to|by|into)\\s+`([^`]+)`")
	arrowRe   = regexp.MustCompile("`([^`]+)`\\s*(?:->|=>|→)\\s*`([^`]+)`")
	// "use `b` instead of `a`"
	insteadRe   = regexp.MustCompile("(?i)`([^`]+)`\\s+instead\\s+of\\s+`([^`]+)`")
	backtickRe  = regexp.MustCompile("(?s)```[A-Za-z0-9]*\\n?(.*?)```|`([^`\\n]+)`")
	codeTokenRe = regexp.MustCompile(`[()\[\]{}=<>*+/%.'"_:]`)
)

// squash removes all whitespace and unifies quotes, so formatting does not
// hide a snippet: "return 6 * 7" matches "return 6*7".
func squash(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case ' ', '\t', '\n', '\r', '\f', '\v':
		case '\'':
			b.WriteByte('"')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// snippets reads a suggested fix for code it names: olds are snippets it
// says to replace, news are snippets that should appear (backtick spans,
// each line, the whole text, and runs of code-like words inside prose).
func snippets(fix string) (olds, news []string) {
	olds, news = replacements(fix)
	oldSet := map[string]bool{}
	for _, o := range olds {
		oldSet[o] = true
	}
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" && !oldSet[s] {
			news = append(news, s)
		}
	}
	for _, m := range backtickRe.FindAllStringSubmatch(fix, -1) {
		span := m[1] + m[2]
		add(span)
		for _, l := range strings.Split(span, "\n") {
			add(l)
		}
	}
	plain := backtickRe.ReplaceAllString(fix, " ")
	add(plain)
	for _, l := range strings.Split(plain, "\n") {
		add(l)
		for _, run := range codeRuns(l) {
			add(run)
		}
	}
	return olds, news
}

// replacements reads the snippets a fix says to replace and their
// replacements: "replace `a` with `b`", "`a` -> `b`", "use `b` instead of `a`".
func replacements(fix string) (olds, news []string) {
	for _, m := range replaceRe.FindAllStringSubmatch(fix, -1) {
		olds, news = append(olds, m[1]), append(news, m[2])
	}
	for _, m := range arrowRe.FindAllStringSubmatch(fix, -1) {
		olds, news = append(olds, m[1]), append(news, m[2])
	}
	for _, m := range insteadRe.FindAllStringSubmatch(fix, -1) {
		news, olds = append(news, m[1]), append(olds, m[2])
	}
	return olds, news
}

// codeRuns returns the runs of code-like words in a line of prose:
// "compute (df['q'] * df['p']).sum() for x" has "(df['q'] * df['p']).sum()".
func codeRuns(line string) []string {
	var runs, run []string
	flush := func() {
		if len(run) > 0 {
			runs = append(runs, strings.TrimRight(strings.Join(run, " "), ".,;"))
		}
		run = nil
	}
	for _, w := range strings.Fields(line) {
		if codeTokenRe.MatchString(strings.TrimRight(w, ".,;")) || isOperator(w) {
			run = append(run, w)
		} else {
			flush()
		}
	}
	flush()
	return runs
}

func isOperator(w string) bool {
	switch w {
	case "+", "-", "*", "/", "//", "%", "**", "==", "!=", "<", ">", "<=", ">=", "and", "or", "not", "in", "is":
		return true
	}
	return false
}

// checkOne decides whether the new code applies one failure's suggested
// fix, by the rule "old snippet gone, new snippet present":
//
//   - a snippet the fix says to replace that is still there as often as
//     before is "stays"; one there less often than before is "gone";
//   - a snippet the fix asks for that was not in the old code and is in the
//     new one is "present".
//
// Old snippets are counted outside the present new ones, so a fix whose new
// snippet contains the old one ("df['a']" -> "df['a'].fillna(0)") is not
// taken for the old code staying.
//
// present and nothing stays: applied. Something stays and nothing is
// present: not applied. Both present and staying: undecided, so the verify
// stage reads the change. That case is ambiguous, not a failure: the new
// snippet may sit on a line that is never used while the buggy one is still
// returned, or the old snippet may also occur, rightly, somewhere the fix
// did not mean; a textual count cannot tell these apart, and the verify call
// costs one model call only in this case. Gone with nothing present (the
// fix written differently) is applied. A failure without a suggested fix
// has nothing to verify.
func checkOne(oldCode, newCode string, f messages.Failure) verdict {
	if strings.TrimSpace(f.SuggestedFix) == "" {
		return applied
	}
	oldS, newS := squash(oldCode), squash(newCode)
	olds, news := snippets(f.SuggestedFix)
	added := appeared(oldS, newS, news)
	stays, gone := oldsFate(oldS, newS, olds, added)
	present := len(added) > 0
	switch {
	case stays && present:
		return undecided
	case stays:
		return notApplied
	case present || gone:
		return applied
	}
	return undecided
}

// appeared returns the new snippets (squashed) that were not in the old
// code and are in the new, longest first.
func appeared(oldS, newS string, news []string) []string {
	var added []string
	for _, sn := range news {
		if n := squash(sn); len(n) >= minSnippet && !strings.Contains(oldS, n) && strings.Contains(newS, n) {
			added = append(added, n)
		}
	}
	slices.SortFunc(added, func(a, b string) int { return len(b) - len(a) })
	return added
}

// oldsFate tells whether a snippet the fix says to replace stays (as often
// as before) or is gone (less often). An old snippet inside a new one that
// appeared ("return total" in "return total / len(xs)") is not the old code
// staying: it is counted outside the new snippets that contain it.
func oldsFate(oldS, newS string, olds, added []string) (stays, gone bool) {
	countOutside := func(code, old string) int {
		for _, n := range added {
			if strings.Contains(n, old) {
				code = strings.ReplaceAll(code, n, "\x00")
			}
		}
		return strings.Count(code, old)
	}
	for _, sn := range olds {
		n := squash(sn)
		if len(n) < minSnippet || !strings.Contains(oldS, n) {
			continue
		}
		if countOutside(newS, n) >= countOutside(oldS, n) {
			stays = true
		} else {
			gone = true
		}
	}
	return stays, gone
}

// checkFix is the mechanical verification of a code fix. Unchanged code
// applies nothing. Otherwise each failure is decided by checkOne; missing
// lists the undone fixes (as "test: suggested fix") and undecided the
// failures only the verify stage can judge (open).
func checkFix(oldCode, newCode string, fs []messages.Failure) (missing []string, open []messages.Failure) {
	if strings.TrimSpace(oldCode) == strings.TrimSpace(newCode) {
		return missingFixes(fs), nil
	}
	for _, f := range fs {
		switch checkOne(oldCode, newCode, f) {
		case notApplied:
			missing = append(missing, missingFixes([]messages.Failure{f})...)
		case undecided:
			open = append(open, f)
		}
	}
	return missing, open
}

func missingFixes(fs []messages.Failure) []string {
	var out []string
	for _, f := range fs {
		fix := strings.TrimSpace(f.SuggestedFix)
		if fix == "" {
			fix = "make it pass: " + firstLine(f.ErrorMessage)
		}
		out = append(out, f.TestName+": "+firstLine(fix))
	}
	return out
}

// unpatched returns the test_error failures whose test function a patch
// round left as it was: the splice did not apply its patch, or neither the
// function's source nor a fixture, helper or setup function it depends on
// changed (see touchedHelpers). A failure whose function cannot be found (a
// session or collection failure) counts as patched when the file changed at
// all.
func unpatched(oldTests, newTests string, fs []messages.Failure, unapplied []string) []messages.Failure {
	var out []messages.Failure
	helpers := touchedHelpers(oldTests, newTests)
	for _, f := range fs {
		fn := testFunc(f.TestName)
		if slices.ContainsFunc(unapplied, func(u string) bool { return sameTest(u, f.TestName) }) {
			out = append(out, f)
			continue
		}
		before := funcSource(oldTests, fn)
		if before == "" {
			if strings.TrimSpace(oldTests) == strings.TrimSpace(newTests) {
				out = append(out, f)
			}
			continue
		}
		if funcSource(newTests, fn) == before && !usesAny(before, testClasses(f.TestName) != "", helpers) {
			out = append(out, f)
		}
	}
	return out
}

// setupNames are the functions pytest and unittest run around tests that do
// not name them: true for those that run only around the methods of a
// class, false for those that may run around any test.
var setupNames = map[string]bool{
	"setup_method": true, "teardown_method": true, "setup_class": true, "teardown_class": true,
	"setUp": true, "tearDown": true, "setUpClass": true, "tearDownClass": true,
	"setup": false, "teardown": false, "setup_function": false, "teardown_function": false,
	"setup_module": false, "teardown_module": false, "setUpModule": false, "tearDownModule": false,
}

// touchedHelpers returns the non-test functions of newTests (fixtures,
// helpers, setup functions) that a patch round changed or added, and those
// that name one of them (a fixture using a changed fixture), as a set.
// Functions are compared by name, as changedOthers does.
func touchedHelpers(oldTests, newTests string) map[string]bool {
	touched := map[string]bool{}
	var rest []string
	for _, name := range funcNames(newTests) {
		switch {
		case strings.HasPrefix(name, "test"):
		case funcSource(newTests, name) != funcSource(oldTests, name):
			touched[name] = true
		default:
			rest = append(rest, name)
		}
	}
	for grew := len(touched) > 0; grew; {
		grew = false
		for i, name := range rest {
			if name != "" && namesAny(funcSource(newTests, name), touched) {
				touched[name], rest[i], grew = true, "", true
			}
		}
	}
	return touched
}

// usesAny reports whether a function's source src may depend on one of the
// helpers: it names one (a fixture parameter, a call), or one is a setup
// function, which runs without being named (a class's setup only around
// methods: inClass).
func usesAny(src string, inClass bool, helpers map[string]bool) bool {
	for h := range helpers {
		if classOnly, ok := setupNames[h]; ok && (inClass || !classOnly) {
			return true
		}
	}
	return namesAny(src, helpers)
}

// namesAny reports whether src has one of the names as a word.
func namesAny(src string, names map[string]bool) bool {
	words := strings.FieldsFunc(src, func(r rune) bool {
		return r != '_' && !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	})
	for _, w := range words {
		if names[w] {
			return true
		}
	}
	return false
}

// changedOthers returns the test functions other than the failing ones
// whose source a patch round changed or removed: a patch must touch only the
// failing tests. Functions are compared by name, so a name that fails
// anywhere (TestK::test_a) is not checked anywhere (TestJ::test_a); helpers
// and fixtures (not named test*) may change. A failure of the run as a whole
// (protocol.SessionTest) failed every test, so there is nothing to check.
func changedOthers(oldTests, newTests string, fs []messages.Failure) []string {
	failing := map[string]bool{}
	for _, f := range fs {
		if strings.TrimSpace(f.TestName) == protocol.SessionTest {
			return nil
		}
		failing[testFunc(f.TestName)] = true
	}
	var out []string
	for _, name := range funcNames(oldTests) {
		if failing[name] || !strings.HasPrefix(name, "test") {
			continue
		}
		if funcSource(newTests, name) != funcSource(oldTests, name) {
			out = append(out, name)
		}
	}
	return out
}

// funcNames returns the names of the functions defined in src (at any
// depth), each once, in order.
func funcNames(src string) []string {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	lines := strings.Split(src, "\n")
	kinds := pyscan.LineKinds(src)
	seen := map[string]bool{}
	var out []string
	for i := 0; i < len(lines) && i < len(kinds); i++ {
		if m := defRe.FindStringSubmatch(lines[i]); m != nil && kinds[i] == pyscan.Statement && !seen[m[2]] {
			seen[m[2]] = true
			out = append(out, m[2])
		}
	}
	return out
}

// sameTest reports whether a patch's test name u names the test id: the
// same function, and the same classes when u names any ("test_a" may be
// TestK::test_a; TestJ::test_a is not). Parameters and the module prefix
// are ignored.
func sameTest(u, id string) bool {
	if testFunc(u) != testFunc(id) {
		return false
	}
	uc, ic := testClasses(u), testClasses(id)
	return uc == "" || uc == ic
}

// testClasses is the class path of a test ID: "m.py::TestA::test_x[1]" -> "TestA".
func testClasses(id string) string {
	id = strings.TrimSpace(id)
	if i := strings.IndexByte(id, '['); i >= 0 {
		id = id[:i]
	}
	var parts []string
	for _, p := range strings.Split(strings.ReplaceAll(id, "::", "."), ".") {
		if p != "" && p != "py" && p != protocol.TestModule && p != "()" {
			parts = append(parts, p)
		}
	}
	if len(parts) <= 1 {
		return ""
	}
	return strings.Join(parts[:len(parts)-1], ".")
}

// testFunc is the function name of a test ID: "TestA::test_x[1]" -> "test_x".
func testFunc(id string) string {
	id = strings.TrimSpace(id)
	if i := strings.IndexByte(id, '['); i >= 0 {
		id = id[:i]
	}
	if i := strings.LastIndex(id, "::"); i >= 0 {
		id = id[i+2:]
	}
	if i := strings.LastIndexByte(id, '.'); i >= 0 {
		id = id[i+1:]
	}
	return id
}

var defRe = regexp.MustCompile(`^([ \t]*)(?:async[ \t]+)?def[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*[(\[]`)

// funcSource returns the source of every definition of function name in src
// (decorators excluded), joined, or "" when there is none. Line kinds come
// from pyscan's tokenizer, so a "def" inside a string does not count.
func funcSource(src, name string) string {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	lines := strings.Split(src, "\n")
	kinds := pyscan.LineKinds(src)
	var out []string
	for i := 0; i < len(lines) && i < len(kinds); i++ {
		m := defRe.FindStringSubmatch(lines[i])
		if kinds[i] != pyscan.Statement || m == nil || m[2] != name {
			continue
		}
		end := blockEnd(lines, kinds, i, len(m[1]))
		out = append(out, strings.Join(lines[i:end], "\n"))
	}
	return strings.Join(out, "\n")
}

// blockEnd is the line after the last non-blank line of the block that
// line i opens at indent: the block ends at the next statement indented no
// deeper.
func blockEnd(lines []string, kinds []pyscan.LineKind, i, indent int) int {
	end := i + 1
	for j := i + 1; j < len(lines) && j < len(kinds); j++ {
		if kinds[j] == pyscan.Statement && len(lines[j])-len(strings.TrimLeft(lines[j], " \t")) <= indent {
			break
		}
		if strings.TrimSpace(lines[j]) != "" {
			end = j + 1
		}
	}
	return end
}
