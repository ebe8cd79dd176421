package llmstages

import (
	"cmp"
	"fmt"
	"regexp"
	"strings"

	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/internal/pyscan"
	"github.com/autocoder/autocoder/internal/trim"
	"github.com/autocoder/autocoder/pkg/messages"
)

// notes collects what normalisation changed in a reply.
type notes []string

func (n *notes) add(format string, args ...any) { *n = append(*n, fmt.Sprintf(format, args...)) }

// stripFences removes a Markdown fence around code, which models sometimes
// put inside a JSON string field. A missing closing fence (a truncated
// reply) is tolerated. The result ends with a newline unless empty.
func stripFences(code string) string {
	lines := strings.Split(strings.ReplaceAll(code, "\r\n", "\n"), "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	if len(lines) > 0 {
		first := strings.TrimSpace(lines[0])
		if strings.HasPrefix(first, "```") || strings.HasPrefix(first, "~~~") {
			ch := first[:1]
			lines = lines[1:]
			last := len(lines) - 1
			for last >= 0 && strings.TrimSpace(lines[last]) == "" {
				last--
			}
			if last >= 0 {
				if t := strings.TrimSpace(lines[last]); len(t) >= 3 && strings.Trim(t, ch) == "" {
					lines = lines[:last]
				}
			}
		}
	}
	s := strings.TrimRight(strings.Join(lines, "\n"), " \t\n")
	if s == "" {
		return ""
	}
	return s + "\n"
}

// hasFence reports whether stripFences would remove a fence.
func hasFence(code string) bool {
	t := strings.TrimLeft(code, " \t\r\n")
	return strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")
}

// debianNameRe matches a Debian binary package name (Debian Policy 5.6.1).
var debianNameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+$`)

// pkgBase is a requirement's name without extras or version specifier.
func pkgBase(req string) string {
	if i := strings.IndexAny(req, "[=<>!~"); i >= 0 {
		return req[:i]
	}
	return req
}

// cleanPackages validates pip requirement strings from a reply: trims them,
// drops what messages.PackageNameRe rejects (URLs, options, shell) and
// standard library modules, renames import names to their distribution
// (sklearn -> scikit-learn) and removes duplicates. It never returns nil.
func cleanPackages(pkgs []string, std pyscan.Set, what string, n *notes) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, p := range pkgs {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !messages.PackageNameRe.MatchString(p) {
			n.add("dropped invalid %s %q", what, p)
			continue
		}
		base := pkgBase(p)
		if dist, ok := pyscan.Distribution(base); ok && protocol.CanonicalName(dist) != protocol.CanonicalName(base) {
			n.add("%s %q is an import name: using distribution %q", what, base, dist)
			p = dist + p[len(base):]
			base = dist
		} else if std.Has(base) && !strings.Contains(base, "-") {
			n.add("dropped %s %q: it is in the standard library", what, p)
			continue
		}
		if k := protocol.CanonicalName(base); !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	return out
}

// cleanSystemPackages validates Debian package names. It never returns nil.
func cleanSystemPackages(pkgs []string, what string, n *notes) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, p := range pkgs {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !debianNameRe.MatchString(p) {
			n.add("dropped invalid %s %q", what, p)
			continue
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// normaliseSolution makes a `solution` reply safe to use: Python only,
// fences stripped, package names validated, keep (the packages already
// installed, for fix) merged in.
func normaliseSolution(s *messages.Solution, keep []string, std pyscan.Set) notes {
	var n notes
	if lang := strings.ToLower(strings.TrimSpace(s.Language)); lang != "python" {
		n.add("language %q replaced by python", s.Language)
	}
	s.Language = "python"
	if hasFence(s.Code) {
		n.add("removed a Markdown fence around the code")
	}
	s.Code = stripFences(s.Code)
	s.Packages = cleanPackages(append(append([]string(nil), keep...), s.Packages...), std, "package", &n)
	s.SystemPackages = cleanSystemPackages(s.SystemPackages, "system package", &n)
	return n
}

// normaliseErrorType maps a model's error type onto the three of Contract 3 (docs/contracts.md);
// anything unrecognised is logic, which sends the failure to a code fix.
func normaliseErrorType(t messages.ErrorType) messages.ErrorType {
	s := strings.ToLower(strings.TrimSpace(string(t)))
	switch {
	case s == string(messages.ErrorLogic):
		return messages.ErrorLogic
	case s == string(messages.ErrorEnvironment) || s == "env" || strings.HasPrefix(s, "environment"):
		return messages.ErrorEnvironment
	case s == string(messages.ErrorTestError) || s == "test" || s == "test error" || s == "test-error" || s == "testerror":
		return messages.ErrorTestError
	}
	return messages.ErrorLogic
}

// canonTest brings a model's test name to TestID form for matching:
// "test_solution.py::TestA::test_x[1]" and "TestA.test_x[1]" both become
// "TestA::test_x[1]".
func canonTest(name string) string {
	n := strings.TrimSpace(name)
	params := ""
	if i := strings.IndexByte(n, '['); i >= 0 {
		n, params = n[:i], n[i:]
	}
	classes, fn, ok := parseTestName(n)
	if !ok {
		return strings.TrimSpace(name)
	}
	return strings.Join(append(classes, fn), "::") + params
}

func stripParams(id string) string {
	if i := strings.IndexByte(id, '['); i >= 0 {
		return id[:i]
	}
	return id
}

func lastPart(id string) string {
	return id[strings.LastIndex(id, "::")+1:]
}

// matchTest finds the failing tests a model's test name refers to: the exact
// ID, else every parametrisation of it, else tests of that function name in
// any class (the model left out the class).
func matchTest(name string, failing []string) []string {
	c := canonTest(name)
	for _, rule := range []func(id string) bool{
		func(id string) bool { return id == c },
		func(id string) bool { return stripParams(id) == stripParams(c) },
		func(id string) bool { return lastPart(stripParams(id)) == lastPart(stripParams(c)) },
	} {
		var ids []string
		for _, id := range failing {
			if rule(id) {
				ids = append(ids, id)
			}
		}
		if len(ids) > 0 {
			return ids
		}
	}
	return nil
}

// missingModuleRe finds the module in "ModuleNotFoundError: No module named 'x.y'".
var missingModuleRe = regexp.MustCompile(`No module named ['"]([A-Za-z_][A-Za-z0-9_.]*)['"]`)

func missingModules(texts ...string) []string {
	var mods []string
	for _, t := range texts {
		for _, m := range missingModuleRe.FindAllStringSubmatch(t, -1) {
			mods = append(mods, m[1])
		}
	}
	return mods
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// defaultFailure stands in for a failing test the model did not diagnose,
// so that nothing in the report is lost.
func defaultFailure(id string, c messages.TestCase) messages.Failure {
	msg := firstLine(c.Message)
	if msg == "" {
		msg = firstLine(c.Details)
	}
	if msg == "" {
		msg = fmt.Sprintf("%s %s", id, c.Outcome)
	}
	f := messages.Failure{
		TestName:         id,
		ErrorMessage:     trim.Middle(msg, 500),
		ExpectedBehavior: "the test passes",
		ActualBehavior:   trim.Middle(strings.TrimSpace(c.Message+"\n"+c.Details), 2000),
		RootCause:        "not diagnosed by the model",
		SuggestedFix:     "make " + protocol.SolutionFile + " satisfy " + id + ": " + trim.Middle(msg, 500),
		ErrorType:        messages.ErrorLogic,
	}
	if mods := missingModules(c.Message, c.Details); len(mods) > 0 {
		f.ErrorType = messages.ErrorEnvironment
		f.RootCause = "module " + mods[0] + " is not installed"
		f.SuggestedFix = "install the distribution that provides " + mods[0]
	}
	return f
}

// sessionFailure stands in for a run that failed as a whole (a timeout, a
// collection problem, no tests) when the model diagnosed nothing.
func sessionFailure(r messages.TestReport) messages.Failure {
	f := messages.Failure{
		TestName:         protocol.SessionTest,
		ExpectedBehavior: "pytest collects and passes every test",
		ActualBehavior:   trim.Middle(strings.TrimSpace(r.Output), 2000),
		RootCause:        "not diagnosed by the model",
		ErrorType:        messages.ErrorLogic,
	}
	switch mods := missingModules(r.Output); {
	case r.TimedOut:
		f.ErrorMessage = "the test run timed out"
		f.SuggestedFix = "make solution.py finish quickly on small inputs: look for infinite loops, blocking reads of stdin or network access"
	case r.ExitCode == 5:
		f.ErrorMessage = "pytest collected no tests"
		f.SuggestedFix = "define test functions named test_* at module level in " + protocol.TestFile
		f.ErrorType = messages.ErrorTestError
	case len(mods) > 0:
		f.ErrorMessage = "No module named '" + mods[0] + "'"
		f.RootCause = "module " + mods[0] + " is not installed"
		f.SuggestedFix = "install the distribution that provides " + mods[0]
		f.ErrorType = messages.ErrorEnvironment
	default:
		f.ErrorMessage = fmt.Sprintf("pytest exited with code %d without reporting a failing test", r.ExitCode)
		f.SuggestedFix = "make solution.py importable and free of errors at import time"
	}
	return f
}

// normaliseDiagnosis enforces what the coordinator relies on:
//   - error types are one of the three (unknown -> logic);
//   - failures name tests that failed in the report, as TestID does; others
//     are dropped, and a failure the model gave for a parametrised test
//     covers each of its failing parametrisations;
//   - every failing test has exactly one failure, a default logic one if the
//     model forgot it, in report order;
//   - a failing report never yields an empty diagnosis;
//   - package names are valid, modules named in "No module named" errors of
//     environment failures are added as distributions, and an environment
//     failure with nothing to install becomes logic (rebuilding the same
//     image cannot fix it).
func normaliseDiagnosis(d *messages.Diagnosis, r messages.TestReport, code, tests string, std pyscan.Set) notes {
	var n notes
	failing := protocol.FailingTests(r)
	cases := failingCases(r)
	d.Failures = oneFailurePerTest(d.Failures, failing, cases, r, &n)

	d.NeedsPackages = cleanPackages(d.NeedsPackages, std, "needed package", &n)
	d.NeedsSystemPackages = cleanSystemPackages(d.NeedsSystemPackages, "needed system package", &n)

	var texts []string
	env := false
	for _, f := range d.Failures {
		if f.ErrorType == messages.ErrorEnvironment {
			env = true
			c := cases[f.TestName]
			texts = append(texts, f.ErrorMessage, f.ActualBehavior, f.RootCause, c.Message, c.Details)
		}
	}
	if !env {
		return n
	}
	if len(failing) == 0 {
		texts = append(texts, r.Output)
	}
	invented := addMissingModules(d, texts, std, solutionAliases(code, tests), &n)
	for i, f := range d.Failures {
		if f.ErrorType != messages.ErrorEnvironment {
			continue
		}
		c := cases[f.TestName]
		mods := missingModules(f.ErrorMessage, f.ActualBehavior, f.RootCause, c.Message, c.Details)
		if len(failing) == 0 {
			mods = append(mods, missingModules(r.Output)...)
		}
		if len(mods) == 0 || !allIn(mods, invented) {
			continue
		}
		d.Failures[i].ErrorType = messages.ErrorTestError
		d.Failures[i].RootCause = fmt.Sprintf("the tests import module %s, which %s does not import and no known package provides: "+
			"most likely the solution under another name", mods[0], protocol.SolutionFile)
		d.Failures[i].SuggestedFix = "import what the tests use from solution (the module under test is " + protocol.SolutionFile + ")"
		n.add("%s: missing module %s only the tests import reclassified as a test error", f.TestName, mods[0])
	}
	if len(d.NeedsPackages) == 0 && len(d.NeedsSystemPackages) == 0 {
		for i, f := range d.Failures {
			if f.ErrorType == messages.ErrorEnvironment {
				d.Failures[i].ErrorType = messages.ErrorLogic
				d.Failures[i].RootCause = strings.TrimSpace(f.RootCause + " (reclassified as logic: the diagnosis names nothing to install)")
				n.add("%s: environment failure with nothing to install reclassified as logic", f.TestName)
			}
		}
	}
	return n
}

// failingCases maps each failing test's ID to its first case in the report.
func failingCases(r messages.TestReport) map[string]messages.TestCase {
	cases := map[string]messages.TestCase{}
	for _, c := range r.Cases {
		if protocol.Failing(c) {
			if _, ok := cases[protocol.TestID(c)]; !ok {
				cases[protocol.TestID(c)] = c
			}
		}
	}
	return cases
}

// oneFailurePerTest normalises the failures' error types and returns one
// failure per failing test, in report order: the model's, or a default
// one. Without failing tests it keeps the model's failures, or adds a
// session failure when the run failed all the same.
func oneFailurePerTest(fs []messages.Failure, failing []string, cases map[string]messages.TestCase, r messages.TestReport, n *notes) []messages.Failure {
	var kept []messages.Failure
	got := map[string]messages.Failure{}
	for _, f := range fs {
		if t := normaliseErrorType(f.ErrorType); t != f.ErrorType {
			n.add("error_type %q of %s read as %s", f.ErrorType, f.TestName, t)
			f.ErrorType = t
		}
		if len(failing) == 0 {
			if strings.TrimSpace(f.TestName) == "" {
				f.TestName = protocol.SessionTest
			}
			kept = append(kept, f)
			continue
		}
		assignFailure(f, failing, got, n)
	}
	if len(failing) > 0 {
		kept = nil
		for _, id := range failing {
			f, ok := got[id]
			if !ok {
				f = defaultFailure(id, cases[id])
				n.add("the model did not diagnose %s: added a default %s failure", id, f.ErrorType)
			}
			kept = append(kept, f)
		}
	} else if len(kept) == 0 && !r.OK() {
		f := sessionFailure(r)
		kept = append(kept, f)
		n.add("the run failed without a failing test and the model diagnosed nothing: added a %s failure", f.ErrorType)
	}
	if kept == nil {
		kept = []messages.Failure{}
	}
	return kept
}

// assignFailure records f in got for each failing test its name matches
// that has no failure yet; a failure that matches none is dropped.
func assignFailure(f messages.Failure, failing []string, got map[string]messages.Failure, n *notes) {
	ids := matchTest(f.TestName, failing)
	if len(ids) == 0 {
		n.add("dropped the diagnosis of %q: not a failing test in the report", f.TestName)
		return
	}
	added := false
	for _, id := range ids {
		if _, dup := got[id]; dup {
			continue
		}
		g := f
		g.TestName = id
		got[id] = g
		added = true
	}
	if !added {
		n.add("dropped a second diagnosis of %q", f.TestName)
	}
}

// addMissingModules adds to d's needed packages the distributions of the
// modules that "No module named" errors in texts name. A module no table
// knows that is one of aliases (solutionAliases: the tests take from it
// what solution.py defines) is not a package: real models write
// `from sales_report import total` for the solution, which installing a
// package of that name cannot fix (and may install some other project's).
// Those are returned, top-level, and taken out of the packages the model
// asked for.
func addMissingModules(d *messages.Diagnosis, texts []string, std pyscan.Set, aliases pyscan.Set, n *notes) (invented pyscan.Set) {
	dists, unknown := pyscan.Resolver{Stdlib: std}.Distributions(missingModules(texts...))
	invented = pyscan.NewSet()
	kept := unknown[:0]
	for _, m := range unknown {
		if top, _, _ := strings.Cut(m, "."); aliases.Has(top) {
			invented[top] = struct{}{}
		} else {
			kept = append(kept, m)
		}
	}
	unknown = kept
	if len(invented) > 0 {
		asked := d.NeedsPackages[:0]
		for _, p := range d.NeedsPackages {
			if _, made := invented[strings.ReplaceAll(protocol.CanonicalName(p), "-", "_")]; made {
				n.add("dropped needed package %q: the tests import the solution's names from it, and no table knows it", p)
				continue
			}
			asked = append(asked, p)
		}
		d.NeedsPackages = asked
	}
	have := map[string]bool{}
	for _, p := range d.NeedsPackages {
		have[protocol.CanonicalName(p)] = true
	}
	for _, p := range append(dists, unknown...) {
		// An unknown module's name is the best guess at its distribution; the
		// build reports it as invalid if the index has no such package.
		if !have[protocol.CanonicalName(p)] && messages.PackageNameRe.MatchString(p) {
			have[protocol.CanonicalName(p)] = true
			d.NeedsPackages = append(d.NeedsPackages, p)
			n.add("added needed package %q from a missing-module error", p)
		}
	}
	return invented
}

// allIn reports whether the top-level name of every module of mods is in set.
func allIn(mods []string, set pyscan.Set) bool {
	for _, m := range mods {
		if !set.Has(m) {
			return false
		}
	}
	return true
}

// normaliseVerification keeps all_fixes_applied and missing_fixes
// consistent. Listed missing fixes win over a true flag: a needless
// escalation costs one call, a wrongly accepted fix costs a test run.
func normaliseVerification(v *messages.FixVerification, failures []messages.Failure) notes {
	var n notes
	missing := []string{}
	for _, m := range v.MissingFixes {
		if m = strings.TrimSpace(m); m != "" {
			missing = append(missing, m)
		}
	}
	v.MissingFixes = missing
	if v.AllFixesApplied && len(missing) > 0 {
		n.add("all_fixes_applied was true but %d fixes were listed as missing: read as false", len(missing))
		v.AllFixesApplied = false
	}
	if !v.AllFixesApplied && len(missing) == 0 {
		v.MissingFixes = suggestedFixes(failures)
		n.add("all_fixes_applied was false without missing fixes: listed every suggested fix")
	}
	return n
}

func suggestedFixes(failures []messages.Failure) []string {
	out := []string{}
	for _, f := range failures {
		fix := strings.TrimSpace(f.SuggestedFix)
		if fix == "" {
			fix = "fix " + firstLine(f.ErrorMessage)
		}
		out = append(out, f.TestName+": "+fix)
	}
	return out
}

var (
	// fromImportRe is `from M import a, b as c` (parenthesised too).
	fromImportRe = regexp.MustCompile(`(?m)^[ \t]*from[ \t]+([A-Za-z_][\w.]*)[ \t]+import[ \t]+\(?([^)\n]+)`)
	// plainImportRe is `import M` or `import M as a`.
	plainImportRe = regexp.MustCompile(`(?m)^[ \t]*import[ \t]+([A-Za-z_][\w.]*)(?:[ \t]+as[ \t]+([A-Za-z_]\w*))?[ \t]*$`)
	// topLevelNameRe is a name solution.py defines at its top level.
	topLevelNameRe = regexp.MustCompile(`(?m)^(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)|^([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=[^=]`)
)

// solutionAliases are the top-level modules, other than solution, that
// the tests take names from which solution.py defines (`from sales_report
// import total`, `import sales_report` then `sales_report.total`): the
// solution under another name. A module the solution itself imports is
// not one.
func solutionAliases(code, tests string) pyscan.Set {
	defined := map[string]bool{}
	for _, m := range topLevelNameRe.FindAllStringSubmatch(code, -1) {
		defined[m[1]+m[2]] = true
	}
	own := pyscan.NewSet(pyscan.Imports(code)...)
	out := pyscan.NewSet()
	add := func(module string, names []string) {
		top, _, _ := strings.Cut(module, ".")
		if top == "solution" || own.Has(top) {
			return
		}
		for _, name := range names {
			if defined[name] {
				out[top] = struct{}{}
				return
			}
		}
	}
	for _, m := range fromImportRe.FindAllStringSubmatch(tests, -1) {
		var names []string
		for _, part := range strings.Split(m[2], ",") {
			if name, _, _ := strings.Cut(strings.TrimSpace(part), " "); name != "" {
				names = append(names, name)
			}
		}
		add(m[1], names)
	}
	for _, m := range plainImportRe.FindAllStringSubmatch(tests, -1) {
		ref := cmp.Or(m[2], m[1])
		var names []string
		for _, a := range regexp.MustCompile(`\b`+regexp.QuoteMeta(ref)+`\.([A-Za-z_]\w*)`).FindAllStringSubmatch(tests, -1) {
			names = append(names, a[1])
		}
		add(m[1], names)
	}
	return out
}
