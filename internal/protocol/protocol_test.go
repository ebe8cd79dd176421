package protocol

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/pkg/messages"
)

func TestCanonicalName(t *testing.T) {
	t.Parallel()
	tests := []struct{ req, want string }{
		{"a__b", "a-b"},
		{"A.B-c", "a-b-c"},
		{"a_-_b", "a-b"},
		{"Pillow", "pillow"},
		{"scikit_learn>=1.2", "scikit-learn"},
		{"requests[socks,security]==2.31", "requests"},
		{" ruamel.yaml ", "ruamel-yaml"},
		{"zope.interface; python_version>'3'", "zope-interface"},
		{"numpy >=1.26", "numpy"},
		{"pkg~=1.0", "pkg"},
		{"", ""},
	}
	for _, tc := range tests {
		if got := CanonicalName(tc.req); got != tc.want {
			t.Errorf("CanonicalName(%q) = %q, want %q", tc.req, got, tc.want)
		}
	}
}

func TestPaths(t *testing.T) {
	t.Parallel()
	tests := []struct{ got, want string }{
		{InputPath("sales.csv"), "/var/inputs/sales.csv"},
		{InputPath("/var/inputs/sales.csv"), "/var/inputs/sales.csv"},
		{InputPath("tree"), "/var/inputs/tree"},
		{OutputPath("total"), "/var/outputs/total"},
		{Option("sales"), "--sales"},
		{SolutionFile, "solution.py"},
		{TestFile, "test_solution.py"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestTestID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		c    messages.TestCase
		want string
	}{
		{messages.TestCase{Name: "test_a", ClassName: "test_solution"}, "test_a"},
		{messages.TestCase{Name: "test_a[1-2]", ClassName: "test_solution"}, "test_a[1-2]"},
		{messages.TestCase{Name: "test_b", ClassName: "test_solution.TestX"}, "TestX::test_b"},
		{messages.TestCase{Name: "test_b", ClassName: "tests.test_solution.TestX.TestInner"}, "TestX::TestInner::test_b"},
		{messages.TestCase{Name: "test_solution", ClassName: ""}, "test_solution"},
		{messages.TestCase{Name: "test_c", ClassName: "other.TestY"}, "TestY::test_c"},
		{messages.TestCase{Name: "test_c", ClassName: "other"}, "test_c"},
	}
	for _, tc := range tests {
		if got := TestID(tc.c); got != tc.want {
			t.Errorf("TestID(%+v) = %q, want %q", tc.c, got, tc.want)
		}
	}
}

func TestFailingTests(t *testing.T) {
	t.Parallel()
	report := messages.TestReport{Cases: []messages.TestCase{
		{Name: "test_ok", ClassName: "test_solution", Outcome: messages.OutcomePassed},
		{Name: "test_totals", ClassName: "test_solution", Outcome: messages.OutcomeFailed},
		{Name: "test_m[1-2]", ClassName: "test_solution.TestMain", Outcome: messages.OutcomeFailed},
		{Name: "test_totals", ClassName: "test_solution", Outcome: messages.OutcomeError},
		{Name: "test_skip", ClassName: "test_solution", Outcome: messages.OutcomeSkipped},
		{Name: "test_solution", ClassName: "", Outcome: messages.OutcomeError},
	}}
	if diff := cmp.Diff([]string{"test_totals", "TestMain::test_m[1-2]", SessionTest}, FailingTests(report)); diff != "" {
		t.Errorf("FailingTests (-want +got):\n%s", diff)
	}
}

func TestFileArgs(t *testing.T) {
	t.Parallel()
	refs := []messages.SampleRef{
		{Name: "sales", Object: "sha256:" + strings.Repeat("a", 64) + ".csv", FileName: "sales.csv"},
		{Name: "tree", Object: "sha256:" + strings.Repeat("b", 64), FileName: "tree", Dir: true},
	}
	want := map[string]string{"sales": "/var/inputs/sales.csv", "tree": "/var/inputs/tree"}
	if diff := cmp.Diff(want, FileArgs(refs)); diff != "" {
		t.Errorf("FileArgs (-want +got):\n%s", diff)
	}
	if got := FileArgs(nil); got != nil {
		t.Errorf("FileArgs(nil) = %v, want nil", got)
	}
}
