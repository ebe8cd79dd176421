package llmstages

import (
	"regexp"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/internal/pyscan"
	"github.com/autocoder/autocoder/pkg/messages"
)

// pyFile is Python source as lines, for textual edits. Line kinds come from
// pyscan's tokenizer, so a "def" inside a docstring or a bracket is never
// taken for a definition.
type pyFile struct {
	lines []string // without line endings
	kinds []pyscan.LineKind
	crlf  bool
}

func parsePy(src string) *pyFile {
	crlf := strings.Contains(src, "\r\n")
	src = strings.ReplaceAll(src, "\r\n", "\n")
	return &pyFile{lines: strings.Split(src, "\n"), kinds: pyscan.LineKinds(src), crlf: crlf}
}

func (f *pyFile) String() string {
	s := strings.Join(f.lines, "\n")
	if f.crlf {
		s = strings.ReplaceAll(s, "\n", "\r\n")
	}
	return s
}

// indentWidth measures leading whitespace, a tab advancing to the next multiple of 8 as in CPython.
func indentWidth(line string) int {
	w := 0
	for _, c := range line {
		switch c {
		case ' ':
			w++
		case '\t':
			w = w/8*8 + 8
		default:
			return w
		}
	}
	return w
}

func leadingSpace(line string) string {
	return line[:len(line)-len(strings.TrimLeft(line, " \t"))]
}

// span is a definition in a pyFile: lines [start, end), with its header
// (the def or class line) at hdr and decorators from start.
type span struct{ start, hdr, end int }

func headerRe(kw, name string) *regexp.Regexp {
	if kw == "class" {
		return regexp.MustCompile(`^[ \t]*class[ \t]+` + regexp.QuoteMeta(name) + `[ \t]*[(:\[]`)
	}
	return regexp.MustCompile(`^[ \t]*(?:async[ \t]+)?def[ \t]+` + regexp.QuoteMeta(name) + `[ \t]*[(\[]`)
}

// find locates `def name` or `class name` at exactly indent within lines
// [lo, hi). When the name is defined twice, the last one wins, as in Python.
func (f *pyFile) find(kw, name string, lo, hi, indent int) (span, bool) {
	re := headerRe(kw, name)
	hdr := -1
	for i := lo; i < hi; i++ {
		if f.kinds[i] == pyscan.Statement && indentWidth(f.lines[i]) == indent && re.MatchString(f.lines[i]) {
			hdr = i
		}
	}
	if hdr < 0 {
		return span{}, false
	}
	return span{start: f.decoratorsStart(hdr, lo), hdr: hdr, end: f.blockEnd(hdr, hi)}, true
}

// blockEnd returns the line after the last one of the block headed at hdr:
// the body runs until a statement at the header's indentation or less.
// Trailing blank lines and shallower comments belong to what follows.
func (f *pyFile) blockEnd(hdr, hi int) int {
	ind := indentWidth(f.lines[hdr])
	last := hdr
	for j := hdr + 1; j < hi; j++ {
		switch f.kinds[j] {
		case pyscan.Statement:
			if indentWidth(f.lines[j]) <= ind {
				return last + 1
			}
			last = j
		case pyscan.Continuation:
			last = j
		case pyscan.Blank:
			if strings.TrimSpace(f.lines[j]) != "" && indentWidth(f.lines[j]) > ind {
				last = j // an indented comment inside the body
			}
		}
	}
	return last + 1
}

// decoratorsStart walks up from a header over its decorators (which may span
// lines, and may have blank or comment lines between them).
func (f *pyFile) decoratorsStart(hdr, lo int) int {
	ind := indentWidth(f.lines[hdr])
	start := hdr
	for p := hdr - 1; p >= lo; p-- {
		if f.kinds[p] != pyscan.Statement {
			continue
		}
		if indentWidth(f.lines[p]) != ind || !strings.HasPrefix(strings.TrimSpace(f.lines[p]), "@") {
			break
		}
		start = p
	}
	return start
}

// bodyIndent returns the indentation of the first statement in the block
// s, or the header's plus four spaces for an empty or one-line body.
func (f *pyFile) bodyIndent(s span) (int, string) {
	for j := s.hdr + 1; j < s.end; j++ {
		if f.kinds[j] == pyscan.Statement {
			return indentWidth(f.lines[j]), leadingSpace(f.lines[j])
		}
	}
	ws := leadingSpace(f.lines[s.hdr]) + "    "
	return indentWidth(ws), ws
}

// replace puts repl in place of lines [start, end).
func (f *pyFile) replace(start, end int, repl []string) {
	lines := make([]string, 0, len(f.lines)-(end-start)+len(repl))
	lines = append(lines, f.lines[:start]...)
	lines = append(lines, repl...)
	lines = append(lines, f.lines[end:]...)
	f.lines = lines
}

// appendTop adds a top-level block at the end, two blank lines after the
// last non-blank line, and ends the file with a newline.
func (f *pyFile) appendTop(block []string) {
	n := len(f.lines)
	for n > 0 && strings.TrimSpace(f.lines[n-1]) == "" {
		n--
	}
	lines := append([]string(nil), f.lines[:n]...)
	if n > 0 {
		lines = append(lines, "", "")
	}
	lines = append(lines, block...)
	f.lines = append(lines, "")
}

// patchLines prepares a model's fixed_code: fences stripped, line endings
// normalised, blank edges trimmed and the common indentation removed.
func patchLines(code string) []string {
	code = strings.ReplaceAll(stripFences(code), "\r\n", "\n")
	lines := strings.Split(code, "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	// Like textwrap.dedent: the longest whitespace prefix common to all non-blank lines.
	prefix, first := "", true
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		ws := leadingSpace(l)
		if first {
			prefix, first = ws, false
			continue
		}
		for !strings.HasPrefix(ws, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			out[i] = ""
		} else {
			out[i] = strings.TrimPrefix(l, prefix)
		}
	}
	return out
}

func indentLines(lines []string, ws string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		if l != "" {
			out[i] = ws + l
		}
	}
	return out
}

// defines reports whether the dedented patch defines kw name at top level.
func defines(lines []string, kw, name string) bool {
	p := parsePy(strings.Join(lines, "\n"))
	_, ok := p.find(kw, name, 0, len(p.lines), 0)
	return ok
}

var (
	identRe    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	firstDefRe = regexp.MustCompile(`^(?:async[ \t]+)?def[ \t]+([A-Za-z_][A-Za-z0-9_]*)`)
)

// parseTestName splits a test name as the model may write it
// ("test_x", "TestA::test_x", "test_solution.py::TestA::test_x[1]",
// "TestA.test_x") into its classes and function. ok is false when it is not
// a test function path.
func parseTestName(name string) (classes []string, fn string, ok bool) {
	n := strings.TrimSpace(name)
	if i := strings.IndexByte(n, '['); i >= 0 {
		n = n[:i]
	}
	var parts []string
	for _, p := range strings.Split(n, "::") {
		if p = strings.TrimSpace(p); p != "" && p != "()" && !strings.HasSuffix(p, ".py") {
			parts = append(parts, p)
		}
	}
	if len(parts) == 1 && strings.Contains(parts[0], ".") {
		parts = strings.Split(parts[0], ".")
		if parts[0] == protocol.TestModule {
			parts = parts[1:]
		}
	}
	if len(parts) == 0 {
		return nil, "", false
	}
	for _, p := range parts {
		if !identRe.MatchString(p) {
			return nil, "", false
		}
	}
	return parts[:len(parts)-1], parts[len(parts)-1], true
}

// target is a test function: its classes (outermost first) and its name.
type target struct {
	classes []string
	fn      string
}

func (t target) String() string {
	return strings.Join(append(append([]string(nil), t.classes...), t.fn), "::")
}

func sameClasses(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// refusal is a patch splice did not apply, by the patch's test name, with why.
type refusal struct {
	Name, Reason string
}

// failingSet is the tests a patch round may change: the round's failing
// tests, each once (the cases of a parametrised test are one function). A
// failure of the run as a whole (protocol.SessionTest: a collection error, a
// timeout) failed every test, so it leaves none to protect and any test may
// be patched.
type failingSet struct {
	all     bool
	targets []target
}

func newFailingSet(failing []string) failingSet {
	var fs failingSet
	seen := map[string]bool{}
	for _, name := range failing {
		if strings.TrimSpace(name) == protocol.SessionTest {
			fs.all = true
			continue
		}
		if classes, fn, ok := parseTestName(name); ok {
			t := target{classes, fn}
			if !seen[t.String()] {
				seen[t.String()] = true
				fs.targets = append(fs.targets, t)
			}
		}
	}
	return fs
}

// has reports whether t is one of the failing tests.
func (fs failingSet) has(t target) bool {
	for _, f := range fs.targets {
		if f.String() == t.String() {
			return true
		}
	}
	return false
}

// isTestName reports whether a function name is one pytest and unittest
// collect as a test (test*). Only those are protected; fixtures, helpers
// and setup methods may be patched, since a test error is often theirs.
func isTestName(fn string) bool { return strings.HasPrefix(fn, "test") }

// resolve maps a patch's test name to the failing test it may change. A
// name without its class is taken for the one failing method of that name
// when there is exactly one and no module-level test has it. A name that is
// not a test (a fixture, helper, setup method or class) is taken as it is.
func (fs failingSet) resolve(t target) (target, string) {
	if fs.all || !isTestName(t.fn) {
		return t, ""
	}
	var same []target
	for _, f := range fs.targets {
		if f.fn != t.fn {
			continue
		}
		if sameClasses(f.classes, t.classes) {
			return f, ""
		}
		same = append(same, f)
	}
	if len(t.classes) == 0 && len(same) == 1 {
		return same[0], ""
	}
	return target{}, t.String() + " is not a failing test: only failing tests are patched"
}

// splice applies patches to the test file in order, each replacing the
// definition it names (decorators included) and keeping the file's line
// endings. Only failing tests change among the tests: a patch for any other
// test is refused, and a patch that redefines a whole test class gives its
// failing methods and its non-test methods (setup_method, fixtures,
// helpers), each spliced into the existing class, plus its new imports, so
// the other test methods stay as they were. A patch named after a fixture or
// helper (not test*) is applied: a test error is often theirs. A patch whose
// failing test is missing is appended when it defines that test (into its
// class, when the class exists). Refused and unapplicable patches are
// returned with the reason; notes say what was left out of patches that were
// applied.
func splice(tests string, patches []messages.TestPatch, failing []string) (string, []refusal, []string) {
	fs := newFailingSet(failing)
	var refused []refusal
	var notes []string
	for _, p := range patches {
		next, why, note := spliceOne(tests, p, fs)
		if why != "" {
			refused = append(refused, refusal{Name: p.TestName, Reason: why})
			continue
		}
		if note != "" {
			notes = append(notes, note)
		}
		tests = next
	}
	return tests, refused, notes
}

// spliceOne applies one patch, or returns why it cannot.
func spliceOne(tests string, p messages.TestPatch, fs failingSet) (out, why, note string) {
	lines := patchLines(p.FixedCode)
	if len(lines) == 0 {
		return "", "the patch is empty", ""
	}
	classes, fn, ok := parseTestName(p.TestName)
	if !ok && strings.TrimSpace(p.TestName) == "" {
		// No name: take the first top-level test the patch defines, or
		// else its first function.
		for _, l := range lines {
			if m := firstDefRe.FindStringSubmatch(l); m != nil && (!ok || isTestName(m[1]) && !isTestName(fn)) {
				fn, ok = m[1], true
			}
		}
	}
	if !ok {
		return "", "the test name is not a test function", ""
	}
	t, why := fs.resolve(target{classes, fn})
	if why != "" {
		return "", why, ""
	}
	f := parsePy(tests)
	if defines(lines, "def", t.fn) {
		lines, extra, note := onlyTarget(lines, t.fn, fs)
		out, why = spliceFunc(f, t, lines)
		if why != "" {
			return "", why, ""
		}
		for _, e := range extra {
			if next, why := spliceFunc(parsePy(out), e.target, e.lines); why == "" {
				out = next
			}
		}
		return out, "", note
	}
	if len(t.classes) > 0 && defines(lines, "class", t.classes[0]) {
		return spliceClass(f, t, lines, fs)
	}
	if len(t.classes) == 0 && defines(lines, "class", t.fn) {
		// The patch is named after a class it redefines: no method of it is required.
		return spliceClass(f, target{classes: []string{t.fn}}, lines, fs)
	}
	return "", "the patch does not define " + t.fn, ""
}

// spliceFunc puts the function patch lines (dedented) in place of t.
func spliceFunc(f *pyFile, t target, lines []string) (string, string) {
	lo, hi, indent, ws := 0, len(f.lines), 0, ""
	var cls span
	for _, c := range t.classes {
		s, found := f.find("class", c, lo, hi, indent)
		if !found {
			// A method without its class cannot become a top-level test:
			// pytest would ask for a fixture named self.
			return "", "its class " + c + " is not in the test file"
		}
		cls = s
		indent, ws = f.bodyIndent(s)
		lo, hi = s.hdr+1, s.end
	}
	if s, found := f.find("def", t.fn, lo, hi, indent); found {
		f.replace(s.start, s.end, indentLines(lines, ws))
		return f.String(), ""
	}
	if len(t.classes) == 0 {
		f.appendTop(lines)
		return f.String(), ""
	}
	if !f.hasBody(cls) {
		// "class TestK: pass": a method cannot go below a one-line body.
		return "", "its class " + t.classes[len(t.classes)-1] + " has its body on the class line"
	}
	f.replace(cls.end, cls.end, append([]string{""}, indentLines(lines, ws)...))
	return f.String(), ""
}

// hasBody reports whether the block s has statements below its header.
func (f *pyFile) hasBody(s span) bool {
	for j := s.hdr + 1; j < s.end; j++ {
		if f.kinds[j] == pyscan.Statement {
			return true
		}
	}
	return false
}

// spliceClass handles a patch that redefines the outermost class of t
// (t.fn is empty when the patch is named after the class). When the file has
// the class, the patch's failing methods of it and its non-test methods
// (setup_method, fixtures, helpers) are each spliced in on their own, and
// its new module-level lines (imports, helpers) go in before the class; the
// patch's other tests are left out, so no passing test is dropped or
// changed. A class the file lacks is appended whole, and after a failure of
// the whole run (nothing passed) the patch replaces the class whole.
func spliceClass(f *pyFile, t target, lines []string, fs failingSet) (string, string, string) {
	top := t.classes[0]
	cs, found := f.find("class", top, 0, len(f.lines), 0)
	if !found {
		f.appendTop(lines)
		return f.String(), "", ""
	}
	if fs.all {
		f.replace(cs.start, cs.end, lines)
		return f.String(), "", ""
	}
	want := wantedTests(t, fs)
	pf := parsePy(strings.Join(lines, "\n"))
	seen := map[string]bool{}
	for _, w := range want {
		seen[w.String()] = true
	}
	helpers := pf.helperMethods(t, want, seen)
	ms := methodSplice{tests: f.String()}
	if why := ms.splice(pf, t, want, helpers); why != "" {
		return "", why, ""
	}
	tests, added, dropped := spliceModuleLines(ms.tests, pf, top, fs)
	if len(ms.took)+len(ms.tookHelpers)+added == 0 {
		if len(ms.missing) > 0 {
			return "", strings.Join(ms.missing, "; "), ""
		}
		return "", "the patch of class " + top + " changes none of its failing tests, its non-test methods or imports", ""
	}
	dropped = append(dropped, pf.leftOutTests(t.classes, seen)...)
	if len(dropped) == 0 {
		return tests, "", ""
	}
	return tests, "", ms.note(top, dropped)
}

// wantedTests are the failing tests a patch of t's outermost class is
// taken for: t itself when it names a method, and the other failing tests
// in that class.
func wantedTests(t target, fs failingSet) []target {
	top := t.classes[0]
	var want []target
	if t.fn != "" {
		want = append(want, t)
	}
	for _, o := range fs.targets {
		if len(o.classes) > 0 && o.classes[0] == top && o.String() != t.String() {
			want = append(want, o)
		}
	}
	return want
}

// helperMethods lists the patch's non-test methods of every class on the
// way to t or a wanted test, each once; seen gets them too.
func (f *pyFile) helperMethods(t target, want []target, seen map[string]bool) []target {
	chains := [][]string{t.classes}
	for _, w := range want {
		chains = append(chains, w.classes)
	}
	var helpers []target
	for _, c := range chains {
		for n := 1; n <= len(c); n++ {
			for _, name := range f.methodNames(c[:n]) {
				h := target{classes: c[:n:n], fn: name}
				if !isTestName(name) && !seen[h.String()] {
					seen[h.String()] = true
					helpers = append(helpers, h)
				}
			}
		}
	}
	return helpers
}

// methodSplice splices methods of a class patch into the tests one by one
// and records what went in and what could not.
type methodSplice struct {
	tests       string
	took        []string // wanted tests spliced in
	tookHelpers []string // non-test methods spliced in
	missing     []string // methods that could not go in, with why
}

// splice splices in the patch pf's methods want, then its helpers (those
// the patch changes). It fails only when the patch lacks t's method.
func (ms *methodSplice) splice(pf *pyFile, t target, want, helpers []target) (why string) {
	for i, w := range append(want, helpers...) {
		m, ok := pf.method(w)
		if !ok {
			if w.String() == t.String() {
				return "the patched class " + t.classes[0] + " does not define " + t.fn
			}
			continue
		}
		if i >= len(want) {
			if cur, ok := parsePy(ms.tests).method(w); ok && slices.Equal(cur, m) {
				continue // a helper the patch repeats unchanged
			}
		}
		next, why := spliceFunc(parsePy(ms.tests), w, m)
		if why != "" {
			ms.missing = append(ms.missing, w.String()+" ("+why+")")
			continue
		}
		ms.tests = next
		if i < len(want) {
			ms.took = append(ms.took, w.String())
		} else {
			ms.tookHelpers = append(ms.tookHelpers, w.fn)
		}
	}
	return ""
}

// note says what was taken from the patch of class top and which of its
// tests were left out.
func (ms *methodSplice) note(top string, dropped []string) string {
	note := "took only the failing " + strings.Join(ms.took, ", ")
	if len(ms.took) == 0 {
		note = "took only the non-test methods"
	}
	if len(ms.tookHelpers) > 0 {
		note += " with the methods " + strings.Join(ms.tookHelpers, ", ")
	}
	return note + " from the patch of class " + top + "; its other tests (" + strings.Join(dropped, ", ") + ") were left out"
}

// methodNames lists the functions defined directly in the class chain
// classes of a patch, each once, in order.
func (f *pyFile) methodNames(classes []string) []string { return f.definedIn(classes, firstDefRe) }

// leftOutTests lists the test methods of the patch's class chain classes
// (and of the classes nested in it) that were not taken (not in took).
func (f *pyFile) leftOutTests(classes []string, took map[string]bool) []string {
	var out []string
	var walk func(chain []string)
	walk = func(chain []string) {
		for _, name := range f.methodNames(chain) {
			if t := (target{classes: chain, fn: name}); isTestName(name) && !took[t.String()] {
				out = append(out, t.String())
			}
		}
		for _, c := range f.classNames(chain) {
			walk(append(chain[:len(chain):len(chain)], c))
		}
	}
	walk(classes[:1])
	return out
}

// classNames lists the classes defined directly in the class chain classes,
// each once, in order.
func (f *pyFile) classNames(classes []string) []string { return f.definedIn(classes, classNameRe) }

// definedIn lists the names that re (whose first group is the name) finds
// on the statements directly in the class chain classes (the module for
// none), each once, in order.
func (f *pyFile) definedIn(classes []string, re *regexp.Regexp) []string {
	lo, hi, indent := 0, len(f.lines), 0
	for _, c := range classes {
		s, found := f.find("class", c, lo, hi, indent)
		if !found {
			return nil
		}
		indent, _ = f.bodyIndent(s)
		lo, hi = s.hdr+1, s.end
	}
	var out []string
	seen := map[string]bool{}
	for i := lo; i < hi; i++ {
		if f.kinds[i] != pyscan.Statement || indentWidth(f.lines[i]) != indent {
			continue
		}
		if m := re.FindStringSubmatch(strings.TrimLeft(f.lines[i], " \t")); m != nil && !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	return out
}

var classNameRe = regexp.MustCompile(`^class[ \t]+([A-Za-z_][A-Za-z0-9_]*)`)

// spliceModuleLines takes the module-level part of a class patch pf (all
// but class top): a failing top-level test or a function the file already
// has replaces that definition, other tests are left out (dropped), and
// statements the file lacks (imports, new helpers) go in before class top.
// added counts what changed.
func spliceModuleLines(tests string, pf *pyFile, top string, fs failingSet) (out string, added int, dropped []string) {
	cs, _ := pf.find("class", top, 0, len(pf.lines), 0)
	var fresh []string
	for i := 0; i < len(pf.lines); i++ {
		if i >= cs.start && i < cs.end {
			continue
		}
		l := pf.lines[i]
		if pf.kinds[i] != pyscan.Statement || indentWidth(l) != 0 || strings.HasPrefix(l, "@") {
			continue
		}
		b := span{start: pf.decoratorsStart(i, 0), hdr: i, end: pf.blockEnd(i, len(pf.lines))}
		i = b.end - 1
		block := pf.lines[b.start:b.end]
		if m := topTestRe.FindStringSubmatch(l); m != nil {
			if t := (target{fn: m[1]}); m[1] != "" && fs.has(t) {
				if next, why := spliceFunc(parsePy(tests), t, block); why == "" {
					tests, added = next, added+1
					continue
				}
			}
			dropped = append(dropped, m[1]+m[2])
			continue
		}
		if m := firstDefRe.FindStringSubmatch(l); m != nil {
			f := parsePy(tests)
			if _, ok := f.find("def", m[1], 0, len(f.lines), 0); ok {
				if next, why := spliceFunc(f, target{fn: m[1]}, block); why == "" && next != tests {
					tests, added = next, added+1
				}
				continue
			}
		}
		if !hasLines(tests, block) {
			fresh = append(append(fresh, block...), "")
		}
	}
	if len(fresh) == 0 {
		return tests, added, dropped
	}
	f := parsePy(tests)
	s, _ := f.find("class", top, 0, len(f.lines), 0)
	f.replace(s.start, s.start, append(fresh, ""))
	return f.String(), added + 1, dropped
}

// hasLines reports whether src has block's lines in a row, at top level.
func hasLines(src string, block []string) bool {
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	for i := 0; i+len(block) <= len(lines); i++ {
		match := true
		for j, l := range block {
			if strings.TrimRight(lines[i+j], " \t") != strings.TrimRight(l, " \t") {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// method returns the dedented source (decorators included) of method t in
// the class chain of a patch, or false when the patch does not define it.
func (f *pyFile) method(t target) ([]string, bool) {
	lo, hi, indent := 0, len(f.lines), 0
	for _, c := range t.classes {
		s, found := f.find("class", c, lo, hi, indent)
		if !found {
			return nil, false
		}
		indent, _ = f.bodyIndent(s)
		lo, hi = s.hdr+1, s.end
	}
	s, found := f.find("def", t.fn, lo, hi, indent)
	if !found {
		return nil, false
	}
	return patchLines(strings.Join(f.lines[s.start:s.end], "\n")), true
}

var topTestRe = regexp.MustCompile(`^(?:(?:async[ \t]+)?def[ \t]+(test[A-Za-z0-9_]*)|class[ \t]+(Test[A-Za-z0-9_]*))`)

// block is a top-level definition taken out of a patch.
type block struct {
	target target
	lines  []string
}

// onlyTarget takes the other top-level tests out of a function patch for
// fn, which would otherwise land in the file as duplicates of passing
// tests. The other failing test functions among them come back in extra,
// each to be spliced in on its own; the rest is left out (said in note).
// fn's definition, helpers and imports stay.
func onlyTarget(lines []string, fn string, fs failingSet) (keep []string, extra []block, note string) {
	p := parsePy(strings.Join(lines, "\n"))
	var others []string
	drop := make([]bool, len(p.lines))
	for i := 0; i < len(p.lines); i++ {
		l := p.lines[i]
		if p.kinds[i] != pyscan.Statement || indentWidth(l) != 0 {
			continue
		}
		m := topTestRe.FindStringSubmatch(l)
		if m == nil || m[1] == fn {
			continue
		}
		s := span{start: p.decoratorsStart(i, 0), hdr: i, end: p.blockEnd(i, len(p.lines))}
		for j := s.start; j < s.end; j++ {
			drop[j] = true
		}
		i = s.end - 1
		if t := (target{fn: m[1]}); m[1] != "" && (fs.all || fs.has(t)) {
			extra = append(extra, block{t, p.lines[s.start:s.end]})
		} else {
			others = append(others, m[1]+m[2])
		}
	}
	if len(others) == 0 && len(extra) == 0 {
		return lines, nil, ""
	}
	blank := 0
	for i, l := range p.lines {
		if drop[i] {
			continue
		}
		if strings.TrimSpace(l) == "" {
			if blank++; blank > 2 {
				continue
			}
		} else {
			blank = 0
		}
		keep = append(keep, l)
	}
	keep = patchLines(strings.Join(keep, "\n"))
	if len(others) > 0 {
		note = "left " + strings.Join(others, ", ") + " out of the patch of " + fn + ": only failing tests are patched"
	}
	return keep, extra, note
}
