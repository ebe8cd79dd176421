package llmstages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/prompts"
	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/internal/pyscan"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

// fakeClient answers each structured call with the canned JSON for its
// schema name. Real HTTP is tested with the llm package's fake server; here
// only the stage logic matters.
type fakeClient struct {
	replies map[string]string
	err     error

	mu   sync.Mutex
	reqs []llm.StructuredRequest
}

var _ llm.Client = (*fakeClient)(nil)

func (f *fakeClient) Structured(_ context.Context, req llm.StructuredRequest) (llm.StructuredReply, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	usage := messages.Usage{InputTokens: 100, OutputTokens: 20, Calls: 1}
	if f.err != nil {
		return llm.StructuredReply{Usage: usage}, f.err
	}
	js, ok := f.replies[req.Schema.Name]
	if !ok {
		return llm.StructuredReply{}, fmt.Errorf("fake: no reply for schema %q", req.Schema.Name)
	}
	return llm.StructuredReply{JSON: json.RawMessage(js), Raw: js, Usage: usage}, nil
}

func (f *fakeClient) calls() []llm.StructuredRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]llm.StructuredRequest(nil), f.reqs...)
}

func command(t *testing.T, stage messages.Stage, in any) *messages.StageCommand {
	t.Helper()
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return &messages.StageCommand{V: messages.WireVersion, JobID: "job-1", Seq: 3, Stage: stage, Input: raw}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var task = messages.TaskSpec{
	Prompt:  "Sum the quantity column.",
	Samples: map[string]string{"sales": "sales.csv"},
	Outputs: map[string]messages.Type{"total": messages.TypeInt},
}

func TestPlan(t *testing.T) {
	t.Parallel()
	fc := &fakeClient{replies: map[string]string{"plan": `{"description":" Sums. ","approach":"1. total(path) -> dict"}`}}
	h := newHandlers(t, fc, Config{})
	out, err := h.Handle(context.Background(), command(t, messages.StagePlan, messages.PlanInput{Task: task}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := diffValue(t, messages.Plan{Description: "Sums.", Approach: "1. total(path) -> dict"}, out); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(messages.Usage{InputTokens: 100, OutputTokens: 20, Calls: 1}, out.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	if len(out.Messages) != 3 || out.Messages[2].Role != "assistant" || !strings.Contains(out.Messages[2].Content, "Sums.") {
		t.Fatalf("messages = %+v", out.Messages)
	}
	for _, m := range out.Messages {
		if m.Stage != messages.StagePlan {
			t.Errorf("message %s has stage %q", m.Role, m.Stage)
		}
	}
	reqs := fc.calls()
	if len(reqs) != 1 || reqs[0].Model != messages.DefaultModel || reqs[0].Schema.Name != llm.PlanSchema.Name {
		t.Errorf("request = %+v", reqs)
	}
}

func TestModelAndMaxTokens(t *testing.T) {
	t.Parallel()
	fc := &fakeClient{replies: map[string]string{"plan": `{"description":"d","approach":"a"}`}}
	h := newHandlers(t, fc, Config{Model: "worker-default", MaxTokens: 777})
	cmd := command(t, messages.StagePlan, messages.PlanInput{Task: task})
	if _, err := h.Handle(context.Background(), cmd); err != nil {
		t.Fatal(err)
	}
	cmd.Model = "job-model"
	if _, err := h.Handle(context.Background(), cmd); err != nil {
		t.Fatal(err)
	}
	reqs := fc.calls()
	if reqs[0].Model != "worker-default" || reqs[1].Model != "job-model" || reqs[0].MaxTokens != 777 {
		t.Errorf("models = %q, %q; max tokens %d", reqs[0].Model, reqs[1].Model, reqs[0].MaxTokens)
	}
}

func TestCodeNormalisation(t *testing.T) {
	t.Parallel()
	reply := mustJSON(t, messages.Solution{
		Language:       "Python3",
		Code:           "```python\nimport pandas as pd\n\ndef main(argv=None, out_dir='/var/outputs'):\n    return 0\n```",
		Packages:       []string{"pandas", "sklearn", "json", "requests; rm -rf /", "numpy>=1.24", "Pandas", " ", "git+https://x/y", "PIL==10.0"},
		SystemPackages: []string{"libgl1", "Bad Name", "libgl1"},
	})
	h := newHandlers(t, &fakeClient{replies: map[string]string{"solution": reply}}, Config{})
	out, err := h.Handle(context.Background(), command(t, messages.StageCode, messages.CodeInput{Task: task, BasePackages: []string{"numpy"}}))
	if err != nil {
		t.Fatal(err)
	}
	want := messages.Solution{
		Language:       "python",
		Code:           "import pandas as pd\n\ndef main(argv=None, out_dir='/var/outputs'):\n    return 0\n",
		Packages:       []string{"pandas", "scikit-learn", "numpy>=1.24", "Pillow==10.0"},
		SystemPackages: []string{"libgl1"},
	}
	if diff := diffValue(t, want, out); diff != "" {
		t.Errorf("solution (-want +got):\n%s", diff)
	}
	notes := strings.Join(out.Notes, "\n")
	for _, w := range []string{`language "Python3"`, "fence", `"requests; rm -rf /"`, `"git+https://x/y"`, `"json"`, `"Bad Name"`, `using distribution "scikit-learn"`} {
		if !strings.Contains(notes, w) {
			t.Errorf("notes lack %q:\n%s", w, notes)
		}
	}
}

func TestCodeEmptyIsInvalidReply(t *testing.T) {
	t.Parallel()
	h := newHandlers(t, &fakeClient{replies: map[string]string{"solution": `{"language":"python","code":"` + "```\\n```" + `","packages":[],"system_packages":[]}`}}, Config{})
	out, err := h.Handle(context.Background(), command(t, messages.StageCode, messages.CodeInput{Task: task}))
	if !errors.Is(err, llm.ErrInvalidReply) || errors.Is(err, ErrBadInput) {
		t.Fatalf("err = %v, want llm.ErrInvalidReply", err)
	}
	if out.Usage.Calls != 1 {
		t.Errorf("usage not reported on error: %+v", out.Usage)
	}
}

func TestFixKeepsInstalledPackages(t *testing.T) {
	t.Parallel()
	reply := `{"language":"python","code":"x = 1\n","packages":["scipy"],"system_packages":[]}`
	fc := &fakeClient{replies: map[string]string{"solution": reply}}
	h := newHandlers(t, fc, Config{})
	in := messages.FixInput{Task: task, Code: "x = 0\n", Tests: "def test_x(): pass\n", Packages: []string{"pandas", "scipy"},
		Failures: []messages.Failure{{TestName: "test_x", ErrorType: messages.ErrorLogic}}, Escalation: 1, Missing: []string{"test_x: set x"}}
	out, err := h.Handle(context.Background(), command(t, messages.StageFix, in))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"pandas", "scipy"}, value[messages.Solution](t, out).Packages); diff != "" {
		t.Errorf("packages (-want +got):\n%s", diff)
	}
	if user := fc.calls()[0].Messages[1].Content; !strings.Contains(user, "The previous fix did not apply these changes") {
		t.Error("fix prompt lacks the escalation")
	}
}

func TestTests(t *testing.T) {
	t.Parallel()
	h := newHandlers(t, &fakeClient{replies: map[string]string{"tests": `{"code":"` + "```python\\nfrom solution import total\\n\\ndef test_total():\\n    assert total([]) == 0\\n```" + `"}`}}, Config{})
	out, err := h.Handle(context.Background(), command(t, messages.StageTests, messages.TestsInput{Task: task}))
	if err != nil {
		t.Fatal(err)
	}
	want := messages.Tests{Code: "from solution import total\n\ndef test_total():\n    assert total([]) == 0\n"}
	if diff := diffValue(t, want, out); diff != "" {
		t.Errorf("tests (-want +got):\n%s", diff)
	}

	h = newHandlers(t, &fakeClient{replies: map[string]string{"tests": `{"code":"def test_x():\n    assert True\n"}`}}, Config{})
	out, err = h.Handle(context.Background(), command(t, messages.StageTests, messages.TestsInput{Task: task}))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(out.Notes, "\n"), "do not import from solution") {
		t.Errorf("notes = %v", out.Notes)
	}
}

func TestPackagesStatic(t *testing.T) {
	t.Parallel()
	fc := &fakeClient{}
	h := newHandlers(t, fc, Config{})
	out, err := h.Handle(context.Background(), command(t, messages.StagePackages, messages.PackagesInput{Imports: []string{"yaml", "os", "sklearn", "solution"}}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := diffValue(t, messages.Packages{Packages: []string{"PyYAML", "scikit-learn"}}, out); diff != "" {
		t.Errorf("packages (-want +got):\n%s", diff)
	}
	if len(fc.calls()) != 0 || out.Messages != nil || out.Usage != (messages.Usage{}) {
		t.Errorf("static resolution called the model: %d calls", len(fc.calls()))
	}
}

func TestPackagesAsksOnlyUnknown(t *testing.T) {
	t.Parallel()
	fc := &fakeClient{replies: map[string]string{"packages": `{"packages":["frobnicate-py","google-cloud-spanner","os","bad name"]}`}}
	h := newHandlers(t, fc, Config{})
	out, err := h.Handle(context.Background(), command(t, messages.StagePackages, messages.PackagesInput{Imports: []string{"numpy", "frobnicate", "google.cloud.spanner", "x; rm"}}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := diffValue(t, messages.Packages{Packages: []string{"numpy", "frobnicate-py", "google-cloud-spanner"}}, out); diff != "" {
		t.Errorf("packages (-want +got):\n%s", diff)
	}
	user := fc.calls()[0].Messages[1].Content
	if !strings.Contains(user, "frobnicate\ngoogle.cloud.spanner\n") || strings.Contains(user, "numpy") || strings.Contains(user, "rm") {
		t.Errorf("packages prompt should list only the unknown imports:\n%s", user)
	}
}

// The coordinator passes the sandbox's own stdlib: a module that Python
// lacks is resolved, not dropped as the 3.11 list would.
func TestPackagesTargetStdlib(t *testing.T) {
	t.Parallel()
	var target []string
	for n := range pyscan.Stdlib() {
		if n != "imghdr" {
			target = append(target, n)
		}
	}
	fc := &fakeClient{replies: map[string]string{"packages": `{"packages":["imghdr-compat"]}`}}
	h := newHandlers(t, fc, Config{})
	out, err := h.Handle(context.Background(), command(t, messages.StagePackages, messages.PackagesInput{Imports: []string{"imghdr", "os"}, Stdlib: target}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := diffValue(t, messages.Packages{Packages: []string{"imghdr-compat"}}, out); diff != "" {
		t.Errorf("packages (-want +got):\n%s", diff)
	}
	if len(fc.calls()) != 1 || !strings.Contains(fc.calls()[0].Messages[1].Content, "imghdr") {
		t.Errorf("want one call asking about imghdr, got %d", len(fc.calls()))
	}
	// Without the list, the worker's (3.11) list drops imghdr: no call.
	fc2 := &fakeClient{}
	if out, err := newHandlers(t, fc2, Config{}).Handle(context.Background(), command(t, messages.StagePackages, messages.PackagesInput{Imports: []string{"imghdr"}})); err != nil || len(fc2.calls()) != 0 {
		t.Errorf("3.11 fallback: %+v, %v, %d calls", out.Value, err, len(fc2.calls()))
	}
}

func TestPackagesEmptyInput(t *testing.T) {
	t.Parallel()
	h := newHandlers(t, &fakeClient{}, Config{})
	out, err := h.Handle(context.Background(), command(t, messages.StagePackages, messages.PackagesInput{}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := diffValue(t, messages.Packages{Packages: []string{}}, out); diff != "" {
		t.Errorf("packages (-want +got):\n%s", diff)
	}
}

func failingReport(cases ...messages.TestCase) messages.TestReport {
	r := messages.TestReport{ExitCode: 1}
	for _, c := range cases {
		switch c.Outcome {
		case messages.OutcomePassed:
			r.Passed++
		case messages.OutcomeFailed:
			r.Failed++
		case messages.OutcomeError:
			r.Errors++
		}
	}
	r.Cases = cases
	return r
}

func tc(name, class string, outcome messages.TestOutcome, msg string) messages.TestCase {
	return messages.TestCase{Name: name, ClassName: class, Outcome: outcome, Message: msg}
}

func TestDiagnoseNormalisation(t *testing.T) {
	t.Parallel()
	logic := func(name string) messages.Failure {
		return messages.Failure{TestName: name, ErrorMessage: "m", ExpectedBehavior: "e", ActualBehavior: "a", RootCause: "r", SuggestedFix: "s", ErrorType: messages.ErrorLogic}
	}
	with := func(f messages.Failure, mod func(*messages.Failure)) messages.Failure { mod(&f); return f }
	tests := []struct {
		name      string
		code      string // the solution; "x = 1\n" when empty
		tests     string // the tests; "def test_a(): pass\n" when empty
		report    messages.TestReport
		reply     messages.Diagnosis
		want      messages.Diagnosis
		wantNotes []string
	}{
		{
			name:  "tests that import the solution under another name: a test error, nothing to install",
			code:  "def total(rows):\n    return sum(rows)\n",
			tests: "from sales_report import total\n\n\ndef test_total():\n    assert total([1, 2]) == 3\n",
			report: failingReport(tc("test_solution", "", messages.OutcomeError,
				"ModuleNotFoundError: No module named 'sales_report'")),
			reply: messages.Diagnosis{
				Failures:      []messages.Failure{with(logic("test_solution"), func(f *messages.Failure) { f.ErrorType = "environment" })},
				NeedsPackages: []string{"sales-report"},
			},
			want: messages.Diagnosis{
				Failures: []messages.Failure{with(logic("test_solution"), func(f *messages.Failure) {
					f.ErrorType = messages.ErrorTestError
					f.RootCause = "the tests import module sales_report, which solution.py does not import and no known package provides: most likely the solution under another name"
					f.SuggestedFix = "import what the tests use from solution (the module under test is solution.py)"
				})},
				NeedsPackages: []string{}, NeedsSystemPackages: []string{},
			},
			wantNotes: []string{`dropped needed package "sales-report"`, "reclassified as a test error"},
		},
		{
			// A package the tests need that the solution does not: a module
			// no table knows, whose names are not the solution's.
			name:  "an unknown module the tests need for themselves is still a package to install",
			tests: "import acmecheck\n\n\ndef test_a():\n    assert acmecheck.valid(1)\n",
			report: failingReport(tc("test_solution", "", messages.OutcomeError,
				"ModuleNotFoundError: No module named 'acmecheck'")),
			reply: messages.Diagnosis{Failures: []messages.Failure{with(logic("test_solution"), func(f *messages.Failure) { f.ErrorType = "environment" })}},
			want: messages.Diagnosis{
				Failures:      []messages.Failure{with(logic("test_solution"), func(f *messages.Failure) { f.ErrorType = messages.ErrorEnvironment })},
				NeedsPackages: []string{"acmecheck"}, NeedsSystemPackages: []string{},
			},
			wantNotes: []string{`added needed package "acmecheck"`},
		},
		{
			name: "an unknown module the solution imports is still a package to install",
			code: "import acmeparse\n",
			report: failingReport(tc("test_solution", "", messages.OutcomeError,
				"ModuleNotFoundError: No module named 'acmeparse'")),
			reply: messages.Diagnosis{Failures: []messages.Failure{with(logic("test_solution"), func(f *messages.Failure) { f.ErrorType = "environment" })}},
			want: messages.Diagnosis{
				Failures:      []messages.Failure{with(logic("test_solution"), func(f *messages.Failure) { f.ErrorType = messages.ErrorEnvironment })},
				NeedsPackages: []string{"acmeparse"}, NeedsSystemPackages: []string{},
			},
			wantNotes: []string{`added needed package "acmeparse"`},
		},
		{
			name:   "unknown error type is logic; passing and unknown tests dropped",
			report: failingReport(tc("test_ok", "test_solution", messages.OutcomePassed, ""), tc("test_a", "test_solution", messages.OutcomeFailed, "assert 1 == 2")),
			reply: messages.Diagnosis{Failures: []messages.Failure{
				with(logic("test_a"), func(f *messages.Failure) { f.ErrorType = "weird" }),
				logic("test_ok"),
				logic("test_ghost"),
			}},
			want:      messages.Diagnosis{Failures: []messages.Failure{logic("test_a")}, NeedsPackages: []string{}, NeedsSystemPackages: []string{}},
			wantNotes: []string{`error_type "weird"`, `"test_ok": not a failing test`, `"test_ghost": not a failing test`},
		},
		{
			name:   "forgotten failing test gets a default, in report order",
			report: failingReport(tc("test_a", "test_solution", messages.OutcomeFailed, "assert 1 == 2\nmore"), tc("test_b", "test_solution", messages.OutcomeError, "boom")),
			reply:  messages.Diagnosis{Failures: []messages.Failure{logic("test_b")}},
			want: messages.Diagnosis{Failures: []messages.Failure{
				{TestName: "test_a", ErrorMessage: "assert 1 == 2", ExpectedBehavior: "the test passes", ActualBehavior: "assert 1 == 2\nmore", RootCause: "not diagnosed by the model", SuggestedFix: "make solution.py satisfy test_a: assert 1 == 2", ErrorType: messages.ErrorLogic},
				logic("test_b"),
			}, NeedsPackages: []string{}, NeedsSystemPackages: []string{}},
			wantNotes: []string{"did not diagnose test_a"},
		},
		{
			name:      "empty diagnosis of a failing report is not empty",
			report:    failingReport(tc("test_a", "test_solution", messages.OutcomeFailed, "x")),
			reply:     messages.Diagnosis{},
			want:      messages.Diagnosis{Failures: []messages.Failure{{TestName: "test_a", ErrorMessage: "x", ExpectedBehavior: "the test passes", ActualBehavior: "x", RootCause: "not diagnosed by the model", SuggestedFix: "make solution.py satisfy test_a: x", ErrorType: messages.ErrorLogic}}, NeedsPackages: []string{}, NeedsSystemPackages: []string{}},
			wantNotes: []string{"did not diagnose test_a"},
		},
		{
			name:   "names matched across spellings; parametrised failure covers each case",
			report: failingReport(tc("test_m", "test_solution.TestMain", messages.OutcomeFailed, "x"), tc("test_p[1]", "test_solution", messages.OutcomeFailed, "x"), tc("test_p[2]", "test_solution", messages.OutcomeFailed, "x")),
			reply:  messages.Diagnosis{Failures: []messages.Failure{logic("test_solution.py::TestMain::test_m"), logic("test_p")}},
			want: messages.Diagnosis{Failures: []messages.Failure{
				logic("TestMain::test_m"), logic("test_p[1]"), logic("test_p[2]"),
			}, NeedsPackages: []string{}, NeedsSystemPackages: []string{}},
		},
		{
			name:   "duplicate diagnosis dropped",
			report: failingReport(tc("test_a", "test_solution", messages.OutcomeFailed, "x")),
			reply: messages.Diagnosis{Failures: []messages.Failure{logic("test_a"),
				with(logic("test_a"), func(f *messages.Failure) { f.RootCause = "second" })}},
			want:      messages.Diagnosis{Failures: []messages.Failure{logic("test_a")}, NeedsPackages: []string{}, NeedsSystemPackages: []string{}},
			wantNotes: []string{"second diagnosis"},
		},
		{
			name:   "environment failure: packages cleaned and added from the error",
			report: failingReport(tc("test_solution", "", messages.OutcomeError, "ModuleNotFoundError: No module named 'yaml'")),
			reply: messages.Diagnosis{
				Failures:            []messages.Failure{with(logic("test_solution"), func(f *messages.Failure) { f.ErrorType = "environment" })},
				NeedsPackages:       []string{"numpy", "pip install foo"},
				NeedsSystemPackages: []string{"libxml2", "; reboot"},
			},
			want: messages.Diagnosis{
				Failures:            []messages.Failure{with(logic("test_solution"), func(f *messages.Failure) { f.ErrorType = messages.ErrorEnvironment })},
				NeedsPackages:       []string{"numpy", "PyYAML"},
				NeedsSystemPackages: []string{"libxml2"},
			},
			wantNotes: []string{`"pip install foo"`, `"; reboot"`, `added needed package "PyYAML"`},
		},
		{
			name:   "environment failure with nothing to install becomes logic",
			report: failingReport(tc("test_a", "test_solution", messages.OutcomeFailed, "ImportError: cannot import name 'total' from 'solution'")),
			reply:  messages.Diagnosis{Failures: []messages.Failure{with(logic("test_a"), func(f *messages.Failure) { f.ErrorType = "env" })}},
			want: messages.Diagnosis{Failures: []messages.Failure{with(logic("test_a"), func(f *messages.Failure) {
				f.RootCause = "r (reclassified as logic: the diagnosis names nothing to install)"
			})}, NeedsPackages: []string{}, NeedsSystemPackages: []string{}},
			wantNotes: []string{"reclassified as logic"},
		},
		{
			name:   "missing solution module is not an environment problem",
			report: failingReport(tc("test_solution", "", messages.OutcomeError, "No module named 'solution'")),
			reply:  messages.Diagnosis{},
			want: messages.Diagnosis{Failures: []messages.Failure{{
				TestName: "test_solution", ErrorMessage: "No module named 'solution'", ExpectedBehavior: "the test passes",
				ActualBehavior: "No module named 'solution'", RootCause: "module solution is not installed (reclassified as logic: the diagnosis names nothing to install)",
				SuggestedFix: "install the distribution that provides solution", ErrorType: messages.ErrorLogic,
			}}, NeedsPackages: []string{}, NeedsSystemPackages: []string{}},
		},
		{
			name:   "timeout without cases and without diagnosis",
			report: messages.TestReport{TimedOut: true, ExitCode: -1, Output: "...."},
			reply:  messages.Diagnosis{},
			want: messages.Diagnosis{Failures: []messages.Failure{{
				TestName: protocol.SessionTest, ErrorMessage: "the test run timed out", ExpectedBehavior: "pytest collects and passes every test",
				ActualBehavior: "....", RootCause: "not diagnosed by the model",
				SuggestedFix: "make solution.py finish quickly on small inputs: look for infinite loops, blocking reads of stdin or network access", ErrorType: messages.ErrorLogic,
			}}, NeedsPackages: []string{}, NeedsSystemPackages: []string{}},
		},
		{
			name:   "no tests collected",
			report: messages.TestReport{ExitCode: 5},
			reply:  messages.Diagnosis{},
			want: messages.Diagnosis{Failures: []messages.Failure{{
				TestName: protocol.SessionTest, ErrorMessage: "pytest collected no tests", ExpectedBehavior: "pytest collects and passes every test",
				RootCause: "not diagnosed by the model", SuggestedFix: "define test functions named test_* at module level in test_solution.py", ErrorType: messages.ErrorTestError,
			}}, NeedsPackages: []string{}, NeedsSystemPackages: []string{}},
		},
		{
			name:   "session failure diagnosed by the model is kept",
			report: messages.TestReport{ExitCode: 2, Output: "SyntaxError"},
			reply:  messages.Diagnosis{Failures: []messages.Failure{with(logic(""), func(f *messages.Failure) { f.ErrorType = "test_error" })}},
			want: messages.Diagnosis{Failures: []messages.Failure{with(logic(protocol.SessionTest), func(f *messages.Failure) { f.ErrorType = messages.ErrorTestError })},
				NeedsPackages: []string{}, NeedsSystemPackages: []string{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fc := &fakeClient{replies: map[string]string{"diagnosis": mustJSON(t, tt.reply)}}
			h := newHandlers(t, fc, Config{})
			code := tt.code
			if code == "" {
				code = "x = 1\n"
			}
			tests := tt.tests
			if tests == "" {
				tests = "def test_a(): pass\n"
			}
			in := messages.DiagnoseInput{Task: task, Code: code, Tests: tests, Report: tt.report}
			out, err := h.Handle(context.Background(), command(t, messages.StageDiagnose, in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := diffValue(t, tt.want, out); diff != "" {
				t.Errorf("diagnosis (-want +got):\n%s", diff)
			}
			notes := strings.Join(out.Notes, "\n")
			for _, w := range tt.wantNotes {
				if !strings.Contains(notes, w) {
					t.Errorf("notes lack %q:\n%s", w, notes)
				}
			}
		})
	}
}

func TestDiagnosePassingReportNoCall(t *testing.T) {
	t.Parallel()
	fc := &fakeClient{}
	h := newHandlers(t, fc, Config{})
	in := messages.DiagnoseInput{Task: task, Code: "x", Tests: "y", Report: messages.TestReport{Passed: 3}}
	out, err := h.Handle(context.Background(), command(t, messages.StageDiagnose, in))
	if err != nil {
		t.Fatal(err)
	}
	if len(fc.calls()) != 0 || len(value[messages.Diagnosis](t, out).Failures) != 0 {
		t.Errorf("passing report: %d calls, value %+v", len(fc.calls()), out.Value)
	}
}

func TestPatchTests(t *testing.T) {
	t.Parallel()
	base := lines(
		"from solution import total",
		"",
		"",
		"def test_a():",
		"    assert total([1, 2]) == 4",
		"",
		"",
		"def test_b():",
		"    assert total([]) == 0",
		"",
		"",
		"class TestK:",
		"    def test_a(self):",
		"        assert total([1]) == 2",
		"",
		"    def test_b(self):",
		"        assert total([2]) == 2",
		"",
	)
	tests := []struct {
		name          string
		failing       []string
		patches       []messages.TestPatch
		wantTests     string
		wantUnapplied []string
		wantReasons   []string
		wantNote      string
	}{
		{
			name:    "failing test patched, fence removed, unknown test refused",
			failing: []string{"test_a"},
			patches: []messages.TestPatch{
				{TestName: "test_a", FixedCode: "```python\ndef test_a():\n    assert total([1, 2]) == 3\n```"},
				{TestName: "TestX::test_gone", FixedCode: "def test_gone(self):\n    pass\n"},
			},
			wantTests:     strings.Replace(base, "== 4", "== 3", 1),
			wantUnapplied: []string{"TestX::test_gone"},
			wantReasons:   []string{"TestX::test_gone: TestX::test_gone is not a failing test: only failing tests are patched"},
			wantNote:      "removed a Markdown fence",
		},
		{
			name:    "patch of a passing test refused",
			failing: []string{"test_a"},
			patches: []messages.TestPatch{
				{TestName: "test_b", FixedCode: "def test_b():\n    assert total([]) == 1\n"},
				{TestName: "test_a", FixedCode: "def test_a():\n    assert total([1, 2]) == 3\n"},
			},
			wantTests:     strings.Replace(base, "== 4", "== 3", 1),
			wantUnapplied: []string{"test_b"},
			wantReasons:   []string{"test_b: test_b is not a failing test: only failing tests are patched"},
			wantNote:      `patch of "test_b" not applied`,
		},
		{
			name:    "class patch keeps the passing method",
			failing: []string{"TestK::test_a"},
			patches: []messages.TestPatch{
				{TestName: "TestK::test_a", FixedCode: "class TestK:\n    def test_a(self):\n        assert total([1]) == 1\n\n    def test_b(self):\n        assert 0\n"},
			},
			wantTests: strings.Replace(base, "assert total([1]) == 2", "assert total([1]) == 1", 1),
			wantNote:  "took only the failing TestK::test_a from the patch of class TestK; its other tests (TestK::test_b) were left out",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reply := mustJSON(t, messages.TestPatches{Patches: tc.patches})
			h := newHandlers(t, &fakeClient{replies: map[string]string{"test_patches": reply}}, Config{})
			var failures []messages.Failure
			for _, f := range tc.failing {
				failures = append(failures, messages.Failure{TestName: f, ErrorType: messages.ErrorTestError})
			}
			in := messages.PatchTestsInput{Task: task, Code: "def total(x): return sum(x)\n", Tests: base, Failures: failures}
			out, err := h.Handle(context.Background(), command(t, messages.StagePatchTests, in))
			if err != nil {
				t.Fatal(err)
			}
			got := value[messages.PatchTestsOutput](t, out)
			if diff := cmp.Diff(tc.wantTests, got.Tests); diff != "" {
				t.Errorf("tests (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantUnapplied, got.Unapplied); diff != "" {
				t.Errorf("unapplied (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantReasons, got.Reasons); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
			if len(got.Patches) != len(tc.patches) || strings.Contains(got.Patches[0].FixedCode, "```") {
				t.Errorf("patches not kept, fences stripped: %+v", got.Patches)
			}
			if !strings.Contains(strings.Join(out.Notes, "\n"), tc.wantNote) {
				t.Errorf("notes %q lack %q", out.Notes, tc.wantNote)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	failures := []messages.Failure{{TestName: "test_a", SuggestedFix: "sum all rows"}, {TestName: "test_b", ErrorMessage: "boom\ntrace"}}
	tests := []struct {
		name      string
		in        messages.VerifyInput
		reply     string
		want      messages.FixVerification
		wantCalls int
	}{
		{
			name:      "unchanged code needs no call",
			in:        messages.VerifyInput{OldCode: "x = 1\n", NewCode: "x = 1", Failures: failures},
			want:      messages.FixVerification{MissingFixes: []string{"test_a: sum all rows", "test_b: fix boom"}, Explanation: "The code did not change, so none of the fixes was applied."},
			wantCalls: 0,
		},
		{
			name:      "applied",
			in:        messages.VerifyInput{OldCode: "x = 1", NewCode: "x = 2", Failures: failures},
			reply:     `{"all_fixes_applied":true,"missing_fixes":[" "],"explanation":"ok"}`,
			want:      messages.FixVerification{AllFixesApplied: true, MissingFixes: []string{}, Explanation: "ok"},
			wantCalls: 1,
		},
		{
			name:      "true with missing fixes is false",
			in:        messages.VerifyInput{OldCode: "x = 1", NewCode: "x = 2", Failures: failures},
			reply:     `{"all_fixes_applied":true,"missing_fixes":["test_b: still raises"],"explanation":"partly"}`,
			want:      messages.FixVerification{MissingFixes: []string{"test_b: still raises"}, Explanation: "partly"},
			wantCalls: 1,
		},
		{
			name:      "false without missing fixes lists every fix",
			in:        messages.VerifyInput{OldCode: "x = 1", NewCode: "x = 2", Failures: failures},
			reply:     `{"all_fixes_applied":false,"missing_fixes":[],"explanation":"no"}`,
			want:      messages.FixVerification{MissingFixes: []string{"test_a: sum all rows", "test_b: fix boom"}, Explanation: "no"},
			wantCalls: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fc := &fakeClient{replies: map[string]string{"fix_verification": tt.reply}}
			out, err := newHandlers(t, fc, Config{}).Handle(context.Background(), command(t, messages.StageVerify, tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := diffValue(t, tt.want, out); diff != "" {
				t.Errorf("verification (-want +got):\n%s", diff)
			}
			if n := len(fc.calls()); n != tt.wantCalls {
				t.Errorf("%d calls, want %d", n, tt.wantCalls)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	raw := func(stage messages.Stage, input string) *messages.StageCommand {
		return &messages.StageCommand{V: messages.WireVersion, Stage: stage, Input: json.RawMessage(input)}
	}
	failures := []messages.Failure{{TestName: "test_a"}}
	tests := []struct {
		name string
		cmd  *messages.StageCommand
	}{
		{"malformed JSON", raw(messages.StagePlan, `{"task":`)},
		{"wrong type", raw(messages.StageCode, `{"task":{"prompt":42}}`)},
		{"null input", raw(messages.StageTests, `null`)},
		{"empty input", raw(messages.StageDiagnose, ``)},
		{"unknown stage", raw("dance", `{}`)},
		{"sandbox stage", raw(messages.StageBuild, `{}`)},
		{"plan without prompt", command(t, messages.StagePlan, messages.PlanInput{})},
		{"fix without failures", command(t, messages.StageFix, messages.FixInput{Code: "x"})},
		{"fix without code", command(t, messages.StageFix, messages.FixInput{Failures: failures})},
		{"patch without tests", command(t, messages.StagePatchTests, messages.PatchTestsInput{Failures: failures})},
		{"verify without failures", command(t, messages.StageVerify, messages.VerifyInput{NewCode: "x"})},
		{"diagnose without code", command(t, messages.StageDiagnose, messages.DiagnoseInput{Report: messages.TestReport{Failed: 1}})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fc := &fakeClient{}
			_, err := newHandlers(t, fc, Config{}).Handle(context.Background(), tt.cmd)
			if !bus.IsPermanent(err) {
				t.Errorf("err = %v, want a permanent error", err)
			}
			if n := len(fc.calls()); n != 0 {
				t.Errorf("bad input made %d model calls", n)
			}
		})
	}
}

func TestClientErrorWrapped(t *testing.T) {
	t.Parallel()
	boom := errors.New("endpoint down")
	out, err := newHandlers(t, &fakeClient{err: boom}, Config{}).Handle(context.Background(), command(t, messages.StagePlan, messages.PlanInput{Task: task}))
	if !errors.Is(err, boom) || errors.Is(err, ErrBadInput) {
		t.Errorf("err = %v", err)
	}
	if out.Usage.Calls != 1 {
		t.Errorf("usage lost on error: %+v", out.Usage)
	}
}

func TestReplyOfWrongShape(t *testing.T) {
	t.Parallel()
	h := newHandlers(t, &fakeClient{replies: map[string]string{"plan": `{"description": 5}`}}, Config{})
	_, err := h.Handle(context.Background(), command(t, messages.StagePlan, messages.PlanInput{Task: task}))
	if !errors.Is(err, llm.ErrInvalidReply) {
		t.Errorf("err = %v, want llm.ErrInvalidReply", err)
	}
}

func TestStageVersion(t *testing.T) {
	t.Parallel()
	h := newHandlers(t, &fakeClient{}, Config{})
	seen := map[string]messages.Stage{}
	for _, s := range []messages.Stage{messages.StagePlan, messages.StageCode, messages.StageTests, messages.StagePackages,
		messages.StageDiagnose, messages.StageFix, messages.StagePatchTests, messages.StageVerify} {
		v := h.Version(s)
		if !strings.HasPrefix(v, string(s)+"/v") || !strings.Contains(v, "prompts@"+prompts.Version) || !strings.Contains(v, "pyscan@"+pyscan.Version) {
			t.Errorf("Version(%s) = %q", s, v)
		}
		if prev, dup := seen[v]; dup {
			t.Errorf("Version(%s) = Version(%s) = %q", s, prev, v)
		}
		seen[v] = s
	}
	if v := h.Version(messages.StageBuild); v != "" {
		t.Errorf("Version(build) = %q, want none: not an LLM stage", v)
	}
}

// TestConcurrentHandle runs every stage at once on one Handlers, for -race.
func TestConcurrentHandle(t *testing.T) {
	t.Parallel()
	fc := &fakeClient{replies: map[string]string{
		"plan":             `{"description":"d","approach":"a"}`,
		"solution":         `{"language":"python","code":"x = 1\n","packages":["numpy"],"system_packages":[]}`,
		"tests":            `{"code":"from solution import x\n"}`,
		"packages":         `{"packages":["frob"]}`,
		"diagnosis":        `{"failures":[],"needs_packages":[],"needs_system_packages":[]}`,
		"test_patches":     `{"patches":[]}`,
		"fix_verification": `{"all_fixes_applied":true,"missing_fixes":[],"explanation":"ok"}`,
	}}
	h := newHandlers(t, fc, Config{})
	failures := []messages.Failure{{TestName: "test_a", ErrorType: messages.ErrorLogic}}
	cmds := []*messages.StageCommand{
		command(t, messages.StagePlan, messages.PlanInput{Task: task}),
		command(t, messages.StageCode, messages.CodeInput{Task: task}),
		command(t, messages.StageTests, messages.TestsInput{Task: task}),
		command(t, messages.StagePackages, messages.PackagesInput{Imports: []string{"frob"}}),
		command(t, messages.StageDiagnose, messages.DiagnoseInput{Task: task, Code: "x", Tests: "y", Report: failingReport(tc("test_a", "test_solution", messages.OutcomeFailed, "m"))}),
		command(t, messages.StageFix, messages.FixInput{Task: task, Code: "x", Failures: failures}),
		command(t, messages.StagePatchTests, messages.PatchTestsInput{Task: task, Tests: "def test_a(): pass\n", Failures: failures}),
		command(t, messages.StageVerify, messages.VerifyInput{OldCode: "a", NewCode: "b", Failures: failures}),
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(cmds)*4)
	for i := 0; i < 4; i++ {
		for _, cmd := range cmds {
			wg.Go(func() {
				if _, err := h.Handle(context.Background(), cmd); err != nil {
					errs <- fmt.Errorf("%s: %w", cmd.Stage, err)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := len(fc.calls()); n != len(cmds)*4 {
		t.Errorf("%d calls, want %d", n, len(cmds)*4)
	}
}

// TestDiagnoseTargetStdlib: a missing module named in the report becomes a
// package to add by the target sandbox's standard library, not the worker's:
// imghdr left the standard library in Python 3.13.
func TestDiagnoseTargetStdlib(t *testing.T) {
	t.Parallel()
	var target []string
	for n := range pyscan.Stdlib() {
		if n != "imghdr" {
			target = append(target, n)
		}
	}
	reply := `{"failures":[{"test_name":"test_a","error_message":"ModuleNotFoundError: No module named 'imghdr'","expected_behavior":"e","actual_behavior":"a","root_cause":"a module is missing","suggested_fix":"install it","error_type":"environment"}],"needs_packages":[],"needs_system_packages":[]}`
	report := failingReport(tc("test_a", "test_solution", messages.OutcomeError, "ModuleNotFoundError: No module named 'imghdr'"))
	for _, c := range []struct {
		name   string
		stdlib []string
		want   []string
	}{
		{"the target lacks imghdr: a package to add", target, []string{"imghdr"}},
		{"no target list: the worker's 3.11 has imghdr", nil, []string{}},
	} {
		fc := &fakeClient{replies: map[string]string{"diagnosis": reply}}
		in := messages.DiagnoseInput{Task: task, Code: "import imghdr", Tests: "y", Report: report, Stdlib: c.stdlib}
		out, err := newHandlers(t, fc, Config{}).Handle(context.Background(), command(t, messages.StageDiagnose, in))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if diff := cmp.Diff(c.want, value[messages.Diagnosis](t, out).NeedsPackages); diff != "" {
			t.Errorf("%s: needs_packages (-want +got):\n%s", c.name, diff)
		}
	}
}

// testHandlers are Handlers on a mux, called as the executor calls them.
type testHandlers struct {
	*Handlers
	mux *stagework.Mux
}

// newHandlers makes Handlers of cfg with client, registered on a mux.
func newHandlers(t *testing.T, client llm.Client, cfg Config) testHandlers {
	t.Helper()
	cfg.Client = client
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := stagework.NewMux(messages.DefaultStages())
	h.Register(mux)
	if err := mux.Err(); err != nil {
		t.Fatal(err)
	}
	return testHandlers{h, mux}
}

// Handle runs cmd through the mux: its input decoded, the handler run,
// its output encoded.
func (h testHandlers) Handle(ctx context.Context, cmd *messages.StageCommand) (stagework.Output[json.RawMessage], error) {
	out, _, err := h.mux.Serve(ctx, cmd)
	return out, err
}

// Version is a stage's version as the cache key holds it.
func (h testHandlers) Version(stage messages.Stage) string { return h.mux.Version(stage) }

// value decodes a handled stage's output.
func value[T any](t *testing.T, out stagework.Output[json.RawMessage]) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(out.Value, &v); err != nil {
		t.Fatalf("output %s: %v", out.Value, err)
	}
	return v
}

// diffValue compares want with out's value decoded as want's type.
func diffValue(t *testing.T, want any, out stagework.Output[json.RawMessage]) string {
	t.Helper()
	got := reflect.New(reflect.TypeOf(want))
	if err := json.Unmarshal(out.Value, got.Interface()); err != nil {
		t.Fatalf("output %s: %v", out.Value, err)
	}
	return cmp.Diff(want, got.Elem().Interface())
}

// TestModelWritesForTheJobsPython: a job on another Python than the
// default (options.python) tells the model so, where the prompts name the
// default: its code must not use syntax or modules that version lacks.
// The setting reaches model stages (messages.SettingsFor), so their cache
// keys differ between versions too.
func TestModelWritesForTheJobsPython(t *testing.T) {
	t.Parallel()
	fc := &fakeClient{replies: map[string]string{"solution": `{"language":"python","code":"x = 1\n","packages":[],"system_packages":[]}`}}
	h := newHandlers(t, fc, Config{})
	cmd := command(t, messages.StageFix, messages.FixInput{Task: task, Code: "x = 3\n", Tests: "def test_x(): pass\n",
		Failures: []messages.Failure{{TestName: "test_x", ErrorType: messages.ErrorLogic}}})
	cmd.Settings = messages.SettingsFor(messages.PoolLLM, &messages.Options{Python: "3.9"})
	if _, err := h.Handle(context.Background(), cmd); err != nil {
		t.Fatal(err)
	}
	sys := fc.calls()[0].Messages[0]
	if sys.Role != "system" || !strings.Contains(sys.Content, "Python 3.9") || strings.Contains(sys.Content, "Python 3.11") {
		t.Errorf("system message: %q; want it naming Python 3.9 only", sys.Content)
	}
}
