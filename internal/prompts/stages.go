package prompts

import (
	"fmt"
	"strings"

	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/internal/trim"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Plan builds the plan stage's conversation (reply: llm.PlanSchema).
func Plan(in messages.PlanInput) []messages.ChatMessage {
	system := preamble + `

Your job now: plan solution.py for the task. The code and its tests are then written separately and at the same time from this plan, so the names and signatures in it are binding for both.

` + scriptProtocol(in.Task) + `
Reply fields:
- description: what the script does, in two to four sentences.
- approach: numbered steps. Name every public function of solution.py besides main and write_outputs, with its parameters, their types and the return value, including at least one core function that takes already-loaded data or paths and returns the results as a dict keyed by output name, without writing files. Say how each input and sample file is read and validated, how each output is computed and formatted, how edge cases are handled (empty data, missing values, rows that violate a constraint), and which third-party packages are used.`

	var b strings.Builder
	renderTask(&b, in.Task)
	renderDataContext(&b, in.DataContext)
	b.WriteString("\nWrite the plan now.\n")
	return chat(system, b.String())
}

// Code builds the code stage's conversation (reply: llm.SolutionSchema,
// or with PlanInline llm.PlannedSolutionSchema: the plan and the code in
// one reply, codeWithPlan).
func Code(in messages.CodeInput) []messages.ChatMessage {
	if in.PlanInline {
		return codeWithPlan(in)
	}
	system := preamble + `

Your job now: write solution.py following the plan and the script protocol. Implement every function the plan names, with exactly the names and signatures it gives: the tests are written from the plan without seeing your code.

` + scriptProtocol(in.Task) + `
` + solutionFields(in.BasePackages)

	var b strings.Builder
	renderTask(&b, in.Task)
	renderDataContext(&b, in.DataContext)
	renderPlan(&b, in.Plan)
	if in.Candidates > 1 {
		fmt.Fprintf(&b, "\n## Candidate %d of %d\n\n%d solutions are written independently from this plan and the first one that passes the tests is kept. Write yours without regard to the others: a correct, simple solution is what counts.\n", in.Candidate, in.Candidates, in.Candidates)
	}
	if len(in.Hints) > 0 || in.Attempt > 0 {
		b.WriteString("\n## Earlier attempts failed\n\n")
		b.WriteString("Earlier solutions written from this plan kept failing the tests, and patching them did not help, so solution.py is being written again from scratch")
		if in.Attempt > 0 {
			fmt.Fprintf(&b, " (attempt %d)", in.Attempt+1)
		}
		b.WriteString(". Do not repeat their mistakes.\n")
		if len(in.Hints) > 0 {
			b.WriteString(data("Failure history of the earlier solutions", "text", "- "+strings.Join(trimAll(in.Hints, fieldBudget), "\n- ")))
		}
	}
	b.WriteString("\nWrite solution.py now.\n")
	return chat(system, b.String())
}

// codeWithPlan is the one-round first pass: the plan, then the code, in
// one reply, while the tests are written from the task alone.
func codeWithPlan(in messages.CodeInput) []messages.ChatMessage {
	system := preamble + `

Your job now: plan solution.py for the task, then write it, in one reply. The tests are written at the same time from the task alone, without seeing your plan or your code: keep every name the task gives (functions, their parameters, inputs and outputs) exactly as it gives them, and follow the script protocol, whose main and write_outputs the tests call.

` + scriptProtocol(in.Task) + `
Reply fields:
- plan: written first, before the code: an object with description (what the script does, in two to four sentences) and approach (numbered steps: every public function of solution.py with its parameters, their types and the return value; how each input and sample file is read and validated, how each output is computed and formatted, how edge cases are handled, and which third-party packages are used).
` + strings.TrimPrefix(solutionFields(in.BasePackages), "Reply fields:\n")

	var b strings.Builder
	renderTask(&b, in.Task)
	renderDataContext(&b, in.DataContext)
	b.WriteString("\nWrite the plan and solution.py now.\n")
	return chat(system, b.String())
}

// trimAll trims each string to budget bytes.
func trimAll(ss []string, budget int) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = trim.Middle(s, budget)
	}
	return out
}

// solutionFields describes the `solution` reply.
func solutionFields(installed []string) string {
	s := `Reply fields:
- language: "python".
- code: the complete contents of solution.py as plain source, without Markdown fences.
- packages: the pip distribution name of every third-party package the code imports (for example "scikit-learn" for sklearn, "PyYAML" for yaml, "Pillow" for PIL), and nothing from the standard library. Pin a version only when the code needs one.`
	if len(installed) > 0 {
		s += " Already installed: " + strings.Join(quoteAll(installed), ", ") + "."
	}
	return s + `
- system_packages: Debian packages the code needs beyond Python itself; usually an empty list.`
}

// Tests builds the tests stage's conversation (reply: llm.TestsSchema).
// Tests are written from the task and the plan only, concurrently with the code.
func Tests(in messages.TestsInput) []messages.ChatMessage {
	if in.Plan == (messages.Plan{}) {
		return testsFromTask(in)
	}
	system := preamble + `

Your job now: write test_solution.py for the script that the task and the plan describe. The code is being written at the same time from the same plan and you do not see it: rely only on the names and behaviour that the plan and the script protocol define.

` + scriptProtocol(in.Task) + `
` + testProtocol(in.Task) + `
Reply fields:
- code: the complete contents of test_solution.py as plain source, without Markdown fences.`

	var b strings.Builder
	renderTask(&b, in.Task)
	renderDataContext(&b, in.DataContext)
	renderPlan(&b, in.Plan)
	renderTestsHistory(&b, in)
	b.WriteString("\nWrite test_solution.py now.\n")
	return chat(system, b.String())
}

// renderTestsHistory tells the model, when the tests are written again,
// why: the earlier ones kept failing on their own mistakes.
func renderTestsHistory(b *strings.Builder, in messages.TestsInput) {
	if len(in.Hints) == 0 && in.Attempt == 0 {
		return
	}
	b.WriteString("\n## Earlier tests were wrong\n\n")
	b.WriteString("Earlier test files for this task kept failing because of their own mistakes (wrong expected values, names or imports), and patching them did not help, so test_solution.py is being written again from scratch")
	if in.Attempt > 0 {
		fmt.Fprintf(b, " (attempt %d)", in.Attempt+1)
	}
	b.WriteString(". Work each expected value out from the task, and do not repeat their mistakes.\n")
	if len(in.Hints) > 0 {
		b.WriteString(data("Failure history of the earlier tests", "text", "- "+strings.Join(trimAll(in.Hints, fieldBudget), "\n- ")))
	}
}

// testsFromTask writes the tests from the task alone: the one-round
// first pass, where the plan comes with the code, at the same time.
func testsFromTask(in messages.TestsInput) []messages.ChatMessage {
	system := preamble + `

Your job now: write test_solution.py for the script that the task describes. The code is being written at the same time from the task alone and you do not see it, nor any plan: rely only on the names and behaviour that the task and the script protocol define.

` + scriptProtocol(in.Task) + `
` + testRules(in.Task, false) + `
Reply fields:
- code: the complete contents of test_solution.py as plain source, without Markdown fences.`

	var b strings.Builder
	renderTask(&b, in.Task)
	renderDataContext(&b, in.DataContext)
	renderTestsHistory(&b, in)
	b.WriteString("\nWrite test_solution.py now.\n")
	return chat(system, b.String())
}

// Packages builds the packages stage's conversation (reply:
// llm.PackagesSchema) for imports the static scan could not map.
func Packages(in messages.PackagesInput) []messages.ChatMessage {
	system := preamble + `

Your job now: name the pip distributions that provide some Python imports. A static scan found these top-level import names (or dotted names under a namespace package such as google) in solution.py and test_solution.py and could not map them itself.

Reply fields:
- packages: the pip distribution name (as on PyPI) for each import that needs one, for example "scikit-learn" for sklearn or "google-cloud-storage" for google.cloud.storage. Leave out names from the Python 3.11 standard library and names you cannot identify with confidence: never guess a similar-sounding name. No version pins, URLs or options.`

	var b strings.Builder
	b.WriteString(data("Import names", "text", strings.Join(in.Imports, "\n")))
	b.WriteString("\nName the distributions now.\n")
	return chat(system, b.String())
}

// Diagnose builds the diagnose stage's conversation (reply:
// llm.DiagnosisSchema). Test output is capped at TestOutputBudget bytes and
// tracebacks share a budget of their own, whatever the caller sent.
func Diagnose(in messages.DiagnoseInput) []messages.ChatMessage {
	failing := protocol.FailingTests(in.Report)
	system := preamble + `

Your job now: diagnose why tests failed. For each failing test, decide where the fault lies:
- environment: a package or system library is missing or broken in the sandbox (ModuleNotFoundError or ImportError for a third-party module, a missing shared library or command). Put the pip distribution names to install in needs_packages (for example "PyYAML" for yaml) and Debian packages in needs_system_packages.
- test_error: the test itself is wrong and a correct solution would fail it: its expected value is miscalculated, it contradicts the task, the plan or the protocols, it uses pytest or the standard library wrongly, or it writes under /var/outputs or /var/inputs.
- logic: solution.py is wrong or incomplete. When in doubt between logic and test_error, choose logic unless the test clearly contradicts the task.

` + scriptProtocol(in.Task) + `
` + testProtocol(in.Task) + `
Reply fields:
- failures: one entry per failing test, with test_name exactly as listed under "Failing tests" (including any Class:: prefix or [parameters]), error_message (the key line of the error), expected_behavior, actual_behavior, root_cause (specific: name the function and the faulty step), suggested_fix (a concrete change to the code or the test) and error_type (logic, environment or test_error).
- needs_packages: pip distributions to add (empty if none).
- needs_system_packages: Debian packages to add (empty if none).`

	var b strings.Builder
	renderTask(&b, in.Task)
	renderPlan(&b, in.Plan)
	b.WriteString("\n## Code under test\n\n")
	renderCode(&b, protocol.SolutionFile, in.Code)
	b.WriteString("\n")
	renderCode(&b, protocol.TestFile, in.Tests)
	renderPackages(&b, in.Packages)
	renderReport(&b, in.Report, failing)
	if len(in.Hints) > 0 {
		b.WriteString("\n")
		b.WriteString(data("Notes from earlier iterations", "text", "- "+strings.Join(in.Hints, "\n- ")))
	}
	b.WriteString("\nDiagnose every failing test now.\n")
	return chat(system, b.String())
}

// renderReport writes the test run: counts, failing test IDs, tracebacks
// and pytest's output.
func renderReport(b *strings.Builder, r messages.TestReport, failing []string) {
	fmt.Fprintf(b, "\n## Test run\n\npassed %d, failed %d, errors %d, skipped %d; pytest exit code %d", r.Passed, r.Failed, r.Errors, r.Skipped, r.ExitCode)
	if r.TimedOut {
		b.WriteString("; the run TIMED OUT and was killed")
	}
	b.WriteString("\n\n")
	if len(failing) == 0 {
		b.WriteString("No individual test case failed: the run as a whole failed. Name the failure \"" + protocol.SessionTest + "\".\n")
	} else {
		b.WriteString(data("Failing tests (copy these names exactly as test_name)", "text", strings.Join(failing, "\n")))
	}
	var cases []messages.TestCase
	for _, c := range r.Cases {
		if protocol.Failing(c) {
			cases = append(cases, c)
		}
	}
	if len(cases) > 0 {
		per := max(caseMinBudget, caseDetailsBudget/len(cases))
		var s strings.Builder
		for _, c := range cases {
			fmt.Fprintf(&s, "=== %s (%s)\n", protocol.TestID(c), c.Outcome)
			if c.Message != "" {
				s.WriteString(trim.Middle(c.Message, fieldBudget) + "\n")
			}
			if c.Details != "" {
				s.WriteString(trim.Middle(c.Details, per) + "\n")
			}
		}
		b.WriteString("\n")
		b.WriteString(data("Failures and tracebacks", "text", s.String()))
	}
	if strings.TrimSpace(r.Output) != "" {
		b.WriteString("\n")
		b.WriteString(data("pytest output (trimmed)", "text", trim.Middle(r.Output, TestOutputBudget)))
	}
}

// Fix builds the fix stage's conversation (reply: llm.SolutionSchema); with
// Reflect it is the code runner's reflection turn (reflectRun). With
// Escalation 1 it names the changes a previous fix failed to apply; from 2 it
// demands a rewrite of every affected function.
func Fix(in messages.FixInput) []messages.ChatMessage {
	if in.Reflect {
		return reflectRun(in) // the code runner: no tests, the run failed (coderunner.go)
	}
	system := preamble + `

Your job now: fix solution.py so that the failing tests pass. The tests are correct: change the code, not the tests. Keep everything that works, keep the names and signatures the plan and the tests use, and follow the script protocol.

` + scriptProtocol(in.Task) + `
` + solutionFields(in.Packages)

	var b strings.Builder
	renderTask(&b, in.Task)
	renderPlan(&b, in.Plan)
	b.WriteString("\n## Current code\n\n")
	renderCode(&b, protocol.SolutionFile+" (to fix)", in.Code)
	b.WriteString("\n")
	renderCode(&b, protocol.TestFile+" (read-only: the tests the code must pass)", in.Tests)
	b.WriteString("\n## Diagnosed failures\n\n")
	renderFailures(&b, "Failures to fix", in.Failures)
	switch {
	case in.Escalation == 1:
		b.WriteString("\n## The previous fix was incomplete\n\n")
		if len(in.Missing) > 0 {
			b.WriteString(data("The previous fix did not apply these changes", "text", "- "+strings.Join(in.Missing, "\n- ")))
		} else {
			b.WriteString("The previous fix did not resolve these failures.\n")
		}
		b.WriteString("Apply every one of them this time, and check each suggested fix against your code before you reply.\n")
	case in.Escalation >= 2:
		b.WriteString("\n## Earlier fixes did not work\n\n")
		if len(in.Missing) > 0 {
			b.WriteString(data("These changes are still missing", "text", "- "+strings.Join(in.Missing, "\n- ")))
		}
		b.WriteString("Small edits have not worked. Rewrite every function involved in these failures completely, from scratch, instead of editing it; keep the other functions, the names and signatures the tests use, and the script protocol. Before you reply, go through the failures one by one and confirm that your new code handles each.\n")
	}
	b.WriteString("\nReturn the complete fixed solution.py now.\n")
	return chat(system, b.String())
}

// PatchTests builds the patch_tests stage's conversation (reply:
// llm.TestPatchesSchema) for failures diagnosed as test_error. With
// Escalation 1 it names the test functions a previous patch left unchanged;
// from 2 it demands each be written again from scratch.
func PatchTests(in messages.PatchTestsInput) []messages.ChatMessage {
	system := preamble + `

Your job now: correct tests in test_solution.py that were diagnosed as wrong: for these failures the test, not solution.py, is at fault. Make each test agree with the task, the plan and the protocols; when an exact expected value is uncertain, assert a property that must hold instead. Do not weaken a test until it checks nothing. Patch only the tests listed as wrong: a patch of any other test is refused, and the other tests stay as they are.

` + testProtocol(in.Task) + `
Reply fields:
- patches: one entry per test to correct, with test_name exactly as listed (for a method of a test class, "TestClass::test_name") and fixed_code: the complete corrected definition of that one test function, including its decorators, starting at column 0 (for a method, the method alone, not the class). Put any extra import inside the function. Do not return the whole file.`

	var b strings.Builder
	renderTask(&b, in.Task)
	b.WriteString("\n## Code\n\n")
	renderCode(&b, protocol.SolutionFile+" (read-only reference)", in.Code)
	b.WriteString("\n")
	renderCode(&b, protocol.TestFile+" (to correct)", in.Tests)
	b.WriteString("\n## Tests diagnosed as wrong\n\n")
	renderFailures(&b, "Failures", in.Failures)
	switch {
	case in.Escalation == 1:
		b.WriteString("\n## The previous patch was incomplete\n\n")
		if len(in.Missing) > 0 {
			b.WriteString(data("These test functions were not corrected", "text", "- "+strings.Join(trimAll(in.Missing, fieldBudget), "\n- ")))
		}
		b.WriteString("Return a patch for every one of them this time, each named exactly as listed and defining that test function, and change what makes it fail.\n")
	case in.Escalation >= 2:
		b.WriteString("\n## Earlier patches did not work\n\n")
		if len(in.Missing) > 0 {
			b.WriteString(data("These test functions are still not corrected", "text", "- "+strings.Join(trimAll(in.Missing, fieldBudget), "\n- ")))
		}
		b.WriteString("Editing these tests has failed twice. Write each listed test function again from scratch: one patch per listed test, test_name exactly as listed, fixed_code the whole new definition of that one function (for a method, the method alone, never its class), with a body that differs from the current one. Check only what the task states for certain; where an exact expected value is in doubt, assert a property that must hold (type, range, sign, length, that the output file exists and parses). Do not patch any other test. Before you reply, go through the listed tests one by one and confirm that each has its patch.\n")
	}
	b.WriteString("\nReturn the corrected test functions now.\n")
	return chat(system, b.String())
}

// Verify builds the verify stage's conversation (reply:
// llm.FixVerificationSchema): did the new code apply each suggested fix?
func Verify(in messages.VerifyInput) []messages.ChatMessage {
	system := preamble + `

Your job now: check whether a fix was applied. You get the diagnosed failures with their suggested fixes, the code before the fix and the code after it. For each failure, decide whether the new code makes the suggested change, or an equivalent change that removes the root cause. Judge the code only; do not run it.

Reply fields:
- all_fixes_applied: true only if every failure's fix is applied.
- missing_fixes: for each fix not applied, one entry "test_name: what is still missing"; empty when all are applied.
- explanation: two or three sentences on what changed and what did not.`

	var b strings.Builder
	renderFailures(&b, "Failures and their suggested fixes", in.Failures)
	b.WriteString("\n")
	renderCode(&b, protocol.SolutionFile+" before the fix", in.OldCode)
	b.WriteString("\n")
	renderCode(&b, protocol.SolutionFile+" after the fix", in.NewCode)
	b.WriteString("\nVerify the fix now.\n")
	return chat(system, b.String())
}

// Constraint builds one call of the constraint stage's conversation (reply:
// llm.ConstraintSchema): a constraint the deterministic parser could not
// read, to turn into a check on one column of the samples. Both the
// constraint and the column names come from users and files, so both are
// fenced data.
func Constraint(constraint string, columns []messages.DataColumn) []messages.ChatMessage {
	system := preamble + `

Your job now: turn one constraint on the sample data into a check on a single column, so that it can be enforced by a Pandera schema. The constraint is written in natural language by the user; the columns of the sample files are listed with the type the profiler inferred.

Check types:
- greater_than: every value is strictly greater than parameters.value.
- less_than: every value is strictly less than parameters.value.
- between: every value is between parameters.min and parameters.max, both included.
- regex: every value matches parameters.pattern (a Python regular expression, matched at the start of the value).
- isin: every value is one of parameters.values.
- not_null: no value is missing.
- none: the constraint is not a check on a single column with one of the types above (it relates several columns, depends on other rows, is vague, or names no column that exists). It is then left to the code.
Choose none rather than a check that would reject valid data. Numeric checks only fit int and float columns; regex only fits string columns.

Reply fields:
- column_name: the column's name exactly as listed, or null for none.
- check_type: one of the check types above.
- parameters: value, min, max, pattern and values; set the ones the check type uses and null the others.
- explanation: one sentence on how the constraint maps to the check, or why it does not.`

	var b strings.Builder
	b.WriteString(data("Constraint", "text", strings.ReplaceAll(strings.TrimSpace(constraint), "\n", " ")))
	var cols strings.Builder
	for _, c := range columns {
		fmt.Fprintf(&cols, "%q (%s) in sample %q\n", c.Name, c.Type, c.Sample)
	}
	if len(columns) == 0 {
		cols.WriteString("(no tabular sample)\n")
	}
	b.WriteString("\n")
	b.WriteString(data("Columns", "text", trim.Middle(cols.String(), dataBudget)))
	b.WriteString("\nMap the constraint to a check now.\n")
	return chat(system, b.String())
}

// PackageReplacement builds the package_replacement stage's conversation
// (reply: llm.PackageReplacementSchema): a package the build could not find,
// to replace with one that exists, or to drop.
func PackageReplacement(in messages.PackageReplacementInput) []messages.ChatMessage {
	where := "the Python package index (pip)"
	naming := "a pip distribution name as on PyPI, no version pins, URLs or options"
	if in.Kind == "apt" {
		where = "Debian's package archive (apt)"
		naming = "a Debian package name (lower case letters, digits, + - .)"
	}
	system := preamble + `

Your job now: an environment build failed because a package does not exist in ` + where + `. Name the package that provides what the code needs instead (` + naming + `), or null when the code can do without it or you are not confident: never guess a similar-sounding name.

Reply fields:
- replacement: the package name, or null.`

	var b strings.Builder
	b.WriteString(data("Package not found", "text", in.Package))
	if len(in.Tried) > 0 {
		b.WriteString(data("Names already tried (all failed)", "text", strings.Join(in.Tried, "\n")))
	}
	if len(in.Imports) > 0 {
		b.WriteString(data("Imports of the code", "text", strings.Join(in.Imports, "\n")))
	}
	if in.Log != "" {
		b.WriteString(data("Build log", "text", trim.Middle(in.Log, 4000)))
	}
	b.WriteString("\nName the replacement now.\n")
	return chat(system, b.String())
}
