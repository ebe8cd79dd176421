package sandbox

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/pkg/messages"
)

// pytestXML is what pytest 7 writes (xunit2) for a mixed run.
const pytestXML = `<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="1" failures="2" skipped="2" tests="7" time="0.1" timestamp="2024-01-01T00:00:00" hostname="sandbox">
<testcase classname="test_solution" name="test_ok" time="0.001" />
<testcase classname="test_solution" name="test_bad" time="0.001"><failure message="assert -1 == 5&#10; +  where -1 = add(2, 3)">test_solution.py:5: in test_bad
    assert add(2, 3) == 5
E   assert -1 == 5</failure></testcase>
<testcase classname="test_solution" name="test_fixture" time="0.001"><error message="failed on setup with &quot;RuntimeError: boom&quot;">RuntimeError: boom</error></testcase>
<testcase classname="test_solution" name="test_skip" time="0.000"><skipped type="pytest.skip" message="not today">test_solution.py:9: not today</skipped></testcase>
<testcase classname="test_solution" name="test_xfail" time="0.000"><skipped type="pytest.xfail" message="known" /></testcase>
<testcase classname="test_solution.TestClass" name="test_param[1-2]" time="0.001" />
<testcase classname="test_solution" name="test_fail_and_teardown" time="0.001"><failure message="assert False">assert False</failure><error message="failed on teardown">teardown boom</error></testcase>
</testsuite></testsuites>`

func TestParseJUnit(t *testing.T) {
	got, err := parseJUnit([]byte(pytestXML))
	if err != nil {
		t.Fatal(err)
	}
	want := []messages.TestCase{
		{Name: "test_ok", ClassName: "test_solution", Outcome: messages.OutcomePassed},
		{Name: "test_bad", ClassName: "test_solution", Outcome: messages.OutcomeFailed,
			Message: "assert -1 == 5\n +  where -1 = add(2, 3)",
			Details: "test_solution.py:5: in test_bad\n    assert add(2, 3) == 5\nE   assert -1 == 5"},
		{Name: "test_fixture", ClassName: "test_solution", Outcome: messages.OutcomeError,
			Message: `failed on setup with "RuntimeError: boom"`, Details: "RuntimeError: boom"},
		{Name: "test_skip", ClassName: "test_solution", Outcome: messages.OutcomeSkipped,
			Message: "not today", Details: "test_solution.py:9: not today"},
		{Name: "test_xfail", ClassName: "test_solution", Outcome: messages.OutcomeSkipped, Message: "known"},
		{Name: "test_param[1-2]", ClassName: "test_solution.TestClass", Outcome: messages.OutcomePassed},
		{Name: "test_fail_and_teardown", ClassName: "test_solution", Outcome: messages.OutcomeFailed,
			Message: "assert False; failed on teardown", Details: "assert False\n\nteardown boom"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseJUnit (-want +got):\n%s", diff)
	}
}

func TestParseJUnitRoots(t *testing.T) {
	tests := []struct {
		name, xml string
		want      []string
		wantErr   bool
	}{
		{"bare testsuite", `<testsuite><testcase name="a"/><testcase name="b"/></testsuite>`, []string{"a", "b"}, false},
		{"nested suites", `<testsuites><testsuite><testsuite><testcase name="deep"/></testsuite></testsuite><testsuite><testcase name="c"/></testsuite></testsuites>`, []string{"deep", "c"}, false},
		{"empty run", `<testsuites><testsuite tests="0"/></testsuites>`, nil, false},
		{"not junit", `<html><body>no</body></html>`, nil, true},
		{"truncated", `<testsuites><testsuite><testcase name="a">`, nil, true},
		{"garbage", `not xml at all`, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cases, err := parseJUnit([]byte(tc.xml))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			var names []string
			for _, c := range cases {
				names = append(names, c.Name)
			}
			if diff := cmp.Diff(tc.want, names); diff != "" && !tc.wantErr {
				t.Errorf("names (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseJUnitTrimsDetails(t *testing.T) {
	long := strings.Repeat("frame\n", 5000) + "E   AssertionError: the end"
	xml := `<testsuite><testcase name="t"><failure message="` + strings.Repeat("m", 5000) + `">` + long + `</failure></testcase></testsuite>`
	cases, err := parseJUnit([]byte(xml))
	if err != nil {
		t.Fatal(err)
	}
	c := cases[0]
	if len(c.Details) > caseDetailsLimit || !strings.HasSuffix(c.Details, "the end") {
		t.Errorf("details: %d bytes, ends %q", len(c.Details), c.Details[len(c.Details)-20:])
	}
	if len(c.Message) > caseMessageLimit {
		t.Errorf("message: %d bytes", len(c.Message))
	}
}

func TestParseTestReport(t *testing.T) {
	tests := []struct {
		name string
		res  RunResult
		want messages.TestReport // Output and Details are not compared
	}{
		{"mixed", RunResult{ExitCode: 1, Files: map[string][]byte{JUnitFile: []byte(pytestXML)}},
			messages.TestReport{Passed: 2, Failed: 2, Errors: 1, Skipped: 2, ExitCode: 1}},
		{"no report", RunResult{ExitCode: 4, Stderr: []byte("ERROR: usage: bad option\nImportError: cannot import name 'x'\n")},
			messages.TestReport{Errors: 1, ExitCode: 4, Cases: []messages.TestCase{{Name: "test_solution", Outcome: messages.OutcomeError,
				Message: "pytest exited with code 4 without a test report: ImportError: cannot import name 'x'"}}}},
		{"timed out", RunResult{ExitCode: -1, TimedOut: true, Files: map[string][]byte{JUnitFile: []byte(pytestXML)}},
			messages.TestReport{Errors: 1, ExitCode: -1, TimedOut: true, Cases: []messages.TestCase{{Name: "test_solution",
				Outcome: messages.OutcomeError, Message: "the test run timed out after 10s and was killed"}}}},
		{"no tests", RunResult{ExitCode: 5, Files: map[string][]byte{JUnitFile: []byte(`<testsuites><testsuite tests="0"/></testsuites>`)}},
			messages.TestReport{Errors: 1, ExitCode: 5, Cases: []messages.TestCase{{Name: "test_solution",
				Outcome: messages.OutcomeError, Message: "pytest ran no tests (exit code 5)"}}}},
		{"garbage report", RunResult{ExitCode: 0, Files: map[string][]byte{JUnitFile: []byte("<nope")}},
			messages.TestReport{Errors: 1, Cases: []messages.TestCase{{Name: "test_solution", Outcome: messages.OutcomeError,
				Message: "pytest exited with code 0 and its report is unreadable: parse JUnit XML: XML syntax error on line 1: unexpected EOF"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ParseTestReport(tc.res, 10*time.Second)
			got.Output = ""
			for i := range got.Cases {
				got.Cases[i].Details = ""
			}
			if tc.want.Cases == nil {
				got.Cases = nil
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
			if got.OK() {
				t.Error("OK() = true")
			}
		})
	}
}

func TestParseTestReportOutput(t *testing.T) {
	res := RunResult{ExitCode: 0, Stdout: []byte(strings.Repeat("x", 100<<10) + "\n1 passed"), Stderr: []byte("warning"),
		Files: map[string][]byte{JUnitFile: []byte(`<testsuite><testcase name="t"/></testsuite>`)}}
	rep := ParseTestReport(res, time.Second)
	if !rep.OK() || len(rep.Output) > reportOutputLimit || !strings.HasSuffix(rep.Output, "--- stderr ---\nwarning") {
		t.Errorf("OK=%v len(Output)=%d tail=%q", rep.OK(), len(rep.Output), rep.Output[len(rep.Output)-40:])
	}
}
