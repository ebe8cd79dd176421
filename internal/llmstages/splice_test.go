package llmstages

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/autocoder/autocoder/pkg/messages"
)

// lines joins its arguments with "\n", for readable Python fixtures.
func lines(ls ...string) string { return strings.Join(ls, "\n") }

func TestSplice(t *testing.T) {
	t.Parallel()
	base := lines(
		"import pytest",
		"from solution import total",
		"",
		"",
		"def helper():",
		"    def test_a():  # nested, never matched",
		"        return 0",
		"    return 1",
		"",
		"",
		"# about test_a",
		"@pytest.mark.parametrize(",
		"    \"x, y\",",
		"    [(1, 2), (3, 4)],",
		")",
		"def test_a(x, y):",
		"    \"\"\"Docstring mentioning",
		"def test_b():",
		"    \"\"\"",
		"    assert total([x]) == y",
		"    # trailing indented comment",
		"",
		"",
		"def test_b():",
		"    assert total([]) == 0",
		"",
	)
	tests := []struct {
		name          string
		src           string
		patches       []messages.TestPatch
		failing       []string // nil: the patches' own test names
		want          string
		wantUnapplied []string
		wantReasons   []string // checked when set
	}{
		{
			name:    "replace with decorators, keep nested and comment",
			src:     base,
			patches: []messages.TestPatch{{TestName: "test_a", FixedCode: "def test_a():\n    assert total([1]) == 1\n"}},
			want: lines(
				"import pytest",
				"from solution import total",
				"",
				"",
				"def helper():",
				"    def test_a():  # nested, never matched",
				"        return 0",
				"    return 1",
				"",
				"",
				"# about test_a",
				"def test_a():",
				"    assert total([1]) == 1",
				"",
				"",
				"def test_b():",
				"    assert total([]) == 0",
				"",
			),
		},
		{
			name:    "last function in file, docstring def ignored",
			src:     base,
			patches: []messages.TestPatch{{TestName: "test_b", FixedCode: "@pytest.mark.slow\ndef test_b():\n    assert total([]) == 0.0"}},
			want:    strings.Replace(base, "def test_b():\n    assert total([]) == 0\n", "@pytest.mark.slow\ndef test_b():\n    assert total([]) == 0.0\n", 1),
		},
		{
			name:    "last function without trailing newline",
			src:     "def test_a():\n    pass\n\ndef test_b():\n    assert 1 == 2",
			patches: []messages.TestPatch{{TestName: "test_b", FixedCode: "def test_b():\n    assert 1 == 1\n"}},
			want:    "def test_a():\n    pass\n\ndef test_b():\n    assert 1 == 1",
		},
		{
			name:    "crlf preserved",
			src:     "import os\r\n\r\ndef test_a():\r\n    assert False\r\n\r\ndef test_b():\r\n    pass\r\n",
			patches: []messages.TestPatch{{TestName: "test_a", FixedCode: "def test_a():\r\n    assert True\r\n"}},
			want:    "import os\r\n\r\ndef test_a():\r\n    assert True\r\n\r\ndef test_b():\r\n    pass\r\n",
		},
		{
			name: "class method reindented",
			src: lines(
				"class TestTotals:",
				"    @staticmethod",
				"    def helper():",
				"        return 1",
				"",
				"    def test_y(self):",
				"        assert False",
				"",
				"    def test_z(self):",
				"        pass",
				"",
				"def test_y():",
				"    pass",
				"",
			),
			patches: []messages.TestPatch{{TestName: "TestTotals::test_y", FixedCode: "@pytest.mark.xfail\ndef test_y(self):\n    assert True\n"}},
			want: lines(
				"class TestTotals:",
				"    @staticmethod",
				"    def helper():",
				"        return 1",
				"",
				"    @pytest.mark.xfail",
				"    def test_y(self):",
				"        assert True",
				"",
				"    def test_z(self):",
				"        pass",
				"",
				"def test_y():",
				"    pass",
				"",
			),
		},
		{
			name:    "class method given indented, pytest node id",
			src:     "class TestA:\n    def test_y(self):\n        assert 0\n",
			patches: []messages.TestPatch{{TestName: "test_solution.py::TestA::test_y[1-2]", FixedCode: "    def test_y(self):\n        assert 1\n"}},
			want:    "class TestA:\n    def test_y(self):\n        assert 1\n",
		},
		{
			name:    "class method with tabs, dotted name",
			src:     "class TestA:\n\tdef test_y(self):\n\t\tassert 0\n\n\tdef test_z(self):\n\t\tpass\n",
			patches: []messages.TestPatch{{TestName: "TestA.test_y", FixedCode: "def test_y(self):\n    assert 1\n"}},
			want:    "class TestA:\n\tdef test_y(self):\n\t    assert 1\n\n\tdef test_z(self):\n\t\tpass\n",
		},
		{
			name:    "missing method inserted into its class",
			src:     "class TestA:\n    def test_y(self):\n        pass\n\n\ndef test_top():\n    pass\n",
			patches: []messages.TestPatch{{TestName: "TestA::test_new", FixedCode: "def test_new(self):\n    assert 2\n"}},
			want:    "class TestA:\n    def test_y(self):\n        pass\n\n    def test_new(self):\n        assert 2\n\n\ndef test_top():\n    pass\n",
		},
		{
			name:          "method of a missing class is not applied",
			src:           "def test_a():\n    pass\n",
			patches:       []messages.TestPatch{{TestName: "TestGone::test_y", FixedCode: "def test_y(self):\n    pass\n"}},
			want:          "def test_a():\n    pass\n",
			wantUnapplied: []string{"TestGone::test_y"},
		},
		{
			name:    "whole class: its failing method is spliced in",
			src:     "import x\n\n\nclass TestA:\n    def test_y(self):\n        assert 0\n\n\ndef test_b():\n    pass\n",
			patches: []messages.TestPatch{{TestName: "TestA::test_y", FixedCode: "class TestA:\n    def test_y(self):\n        assert 1\n"}},
			want:    "import x\n\n\nclass TestA:\n    def test_y(self):\n        assert 1\n\n\ndef test_b():\n    pass\n",
		},
		{
			name: "class patch keeps the passing methods it leaves out",
			src: lines(
				"class TestK:",
				"    def test_a(self):",
				"        assert total([1]) == 2",
				"",
				"    def test_b(self):",
				"        assert total([]) == 0",
				"",
			),
			patches: []messages.TestPatch{{TestName: "TestK::test_a", FixedCode: lines(
				"class TestK:",
				"    def test_a(self):",
				"        assert total([1]) == 1",
			)}},
			failing: []string{"TestK::test_a"},
			want: lines(
				"class TestK:",
				"    def test_a(self):",
				"        assert total([1]) == 1",
				"",
				"    def test_b(self):",
				"        assert total([]) == 0",
				"",
			),
		},
		{
			name: "class patch that also rewrites a passing method: only the failing ones and its helpers taken",
			src: lines(
				"class TestK:",
				"    def test_a(self):",
				"        assert 0",
				"",
				"    def test_b(self):",
				"        assert 1",
				"",
				"    def test_c(self):",
				"        assert 0",
				"",
			),
			patches: []messages.TestPatch{{TestName: "TestK::test_a", FixedCode: lines(
				"class TestK:",
				"    @staticmethod",
				"    def helper():",
				"        return 2",
				"",
				"    def test_a(self):",
				"        assert 'a'",
				"",
				"    def test_b(self):",
				"        assert 'changed'",
				"",
				"    def test_c(self):",
				"        assert 'c'",
			)}},
			failing: []string{"TestK::test_a", "TestK::test_c"},
			want: lines(
				"class TestK:",
				"    def test_a(self):",
				"        assert 'a'",
				"",
				"    def test_b(self):",
				"        assert 1",
				"",
				"    def test_c(self):",
				"        assert 'c'",
				"",
				"    @staticmethod",
				"    def helper():",
				"        return 2",
				"",
			),
		},
		{
			name:          "class patch without the failing method",
			src:           "class TestK:\n    def test_a(self):\n        assert 0\n",
			patches:       []messages.TestPatch{{TestName: "TestK::test_a", FixedCode: "class TestK:\n    def test_z(self):\n        pass\n"}},
			want:          "class TestK:\n    def test_a(self):\n        assert 0\n",
			wantUnapplied: []string{"TestK::test_a"},
			wantReasons:   []string{"the patched class TestK does not define test_a"},
		},
		{
			name:          "patch of a passing test is refused",
			src:           "def test_a():\n    assert 0\n\n\ndef test_b():\n    assert 1\n",
			patches:       []messages.TestPatch{{TestName: "test_b", FixedCode: "def test_b():\n    assert 2\n"}, {TestName: "test_a", FixedCode: "def test_a():\n    assert 1\n"}},
			failing:       []string{"test_a"},
			want:          "def test_a():\n    assert 1\n\n\ndef test_b():\n    assert 1\n",
			wantUnapplied: []string{"test_b"},
			wantReasons:   []string{"test_b is not a failing test: only failing tests are patched"},
		},
		{
			name:          "patch of a method of the same name in another class is refused",
			src:           "class TestJ:\n    def test_a(self):\n        assert 1\n\n\nclass TestK:\n    def test_a(self):\n        assert 0\n",
			patches:       []messages.TestPatch{{TestName: "TestJ::test_a", FixedCode: "def test_a(self):\n    assert 2\n"}},
			failing:       []string{"TestK::test_a"},
			want:          "class TestJ:\n    def test_a(self):\n        assert 1\n\n\nclass TestK:\n    def test_a(self):\n        assert 0\n",
			wantUnapplied: []string{"TestJ::test_a"},
			wantReasons:   []string{"TestJ::test_a is not a failing test: only failing tests are patched"},
		},
		{
			name:    "a name without its class goes to the one failing method",
			src:     "def test_b():\n    pass\n\n\nclass TestK:\n    def test_a(self):\n        assert 0\n",
			patches: []messages.TestPatch{{TestName: "test_a", FixedCode: "def test_a(self):\n    assert 1\n"}},
			failing: []string{"TestK::test_a[1]"},
			want:    "def test_b():\n    pass\n\n\nclass TestK:\n    def test_a(self):\n        assert 1\n",
		},
		{
			name:    "a parametrised method named without its class, failing in two cases",
			src:     "import pytest\n\n\nclass TestK:\n    @pytest.mark.parametrize('x', [1, 2])\n    def test_a(self, x):\n        assert x == 0\n\n    def test_b(self):\n        pass\n",
			patches: []messages.TestPatch{{TestName: "test_a", FixedCode: "@pytest.mark.parametrize('x', [1, 2])\ndef test_a(self, x):\n    assert x > 0\n"}},
			failing: []string{"TestK::test_a[1]", "TestK::test_a[2]", "test_solution.py::TestK::test_a[1]"},
			want:    "import pytest\n\n\nclass TestK:\n    @pytest.mark.parametrize('x', [1, 2])\n    def test_a(self, x):\n        assert x > 0\n\n    def test_b(self):\n        pass\n",
		},
		{
			name:          "a name without its class failing in two classes is ambiguous",
			src:           "class TestJ:\n    def test_a(self):\n        assert 0\n\n\nclass TestK:\n    def test_a(self):\n        assert 0\n",
			patches:       []messages.TestPatch{{TestName: "test_a", FixedCode: "def test_a(self):\n    assert 1\n"}},
			failing:       []string{"TestJ::test_a", "TestK::test_a"},
			want:          "class TestJ:\n    def test_a(self):\n        assert 0\n\n\nclass TestK:\n    def test_a(self):\n        assert 0\n",
			wantUnapplied: []string{"test_a"},
			wantReasons:   []string{"test_a is not a failing test: only failing tests are patched"},
		},
		{
			name:    "a fixture patch is applied: only tests are protected",
			src:     "import pytest\n\n\n@pytest.fixture\ndef data():\n    return 1\n\n\ndef test_b(data):\n    assert data == 2\n",
			patches: []messages.TestPatch{{TestName: "data", FixedCode: "@pytest.fixture\ndef data():\n    return 2\n"}},
			failing: []string{"test_b"},
			want:    "import pytest\n\n\n@pytest.fixture\ndef data():\n    return 2\n\n\ndef test_b(data):\n    assert data == 2\n",
		},
		{
			name:    "a fixture patch that also rewrites a passing test keeps only the fixture",
			src:     "def data():\n    return 1\n\n\ndef test_b():\n    assert data() == 2\n\n\ndef test_c():\n    assert data() == 1\n",
			patches: []messages.TestPatch{{TestName: "data", FixedCode: "def data():\n    return 2\n\n\ndef test_c():\n    assert data() == 2\n"}},
			failing: []string{"test_b"},
			want:    "def data():\n    return 2\n\n\ndef test_b():\n    assert data() == 2\n\n\ndef test_c():\n    assert data() == 1\n",
		},
		{
			name:    "a fixture patch that also fixes its failing test applies both",
			src:     "def data():\n    return 1\n\n\ndef test_b():\n    assert data() == 2\n\n\ndef test_c():\n    assert 1\n",
			patches: []messages.TestPatch{{TestName: "data", FixedCode: "def data():\n    return [1]\n\n\ndef test_b():\n    assert data() == [1]\n\n\ndef test_c():\n    assert 0\n"}},
			failing: []string{"test_b"},
			want:    "def data():\n    return [1]\n\n\ndef test_b():\n    assert data() == [1]\n\n\ndef test_c():\n    assert 1\n",
		},
		{
			name:    "a test patch keeps its new helper and import when it leaves a passing test out",
			src:     "def test_a():\n    assert 0\n\n\ndef test_b():\n    assert 1\n",
			patches: []messages.TestPatch{{TestName: "test_a", FixedCode: "import math\n\n\ndef test_b():\n    assert 2\n\n\ndef two():\n    return math.sqrt(4)\n\n\ndef test_a():\n    assert two() == 2\n"}},
			failing: []string{"test_a"},
			want:    "import math\n\n\ndef two():\n    return math.sqrt(4)\n\n\ndef test_a():\n    assert two() == 2\n\n\ndef test_b():\n    assert 1\n",
		},
		{
			name:    "no name: the patch's test is taken, not its first helper",
			src:     "def test_a():\n    assert 0\n",
			patches: []messages.TestPatch{{TestName: "", FixedCode: "def one():\n    return 1\n\n\ndef test_a():\n    assert one()\n"}},
			failing: []string{"test_a"},
			want:    "def one():\n    return 1\n\n\ndef test_a():\n    assert one()\n",
		},
		{
			name:    "a setup method patched by its own name",
			src:     "class TestK:\n    def setup_method(self):\n        self.x = 1\n\n    def test_a(self):\n        assert self.x == 2\n",
			patches: []messages.TestPatch{{TestName: "TestK::setup_method", FixedCode: "def setup_method(self):\n    self.x = 2\n"}},
			failing: []string{"TestK::test_a"},
			want:    "class TestK:\n    def setup_method(self):\n        self.x = 2\n\n    def test_a(self):\n        assert self.x == 2\n",
		},
		{
			name: "a class patch that fixes setup_method, adds an import and a fixture, and rewrites a passing test",
			src: lines(
				"import pytest",
				"",
				"",
				"class TestK:",
				"    def setup_method(self):",
				"        self.x = 1",
				"",
				"    def test_a(self):",
				"        assert self.x == 2",
				"",
				"    def test_b(self):",
				"        assert 1",
				"",
			),
			patches: []messages.TestPatch{{TestName: "TestK::test_a", FixedCode: lines(
				"import math",
				"import pytest",
				"",
				"",
				"class TestK:",
				"    def setup_method(self):",
				"        self.x = 2",
				"",
				"    @pytest.fixture",
				"    def four(self):",
				"        return 4",
				"",
				"    def test_a(self, four):",
				"        assert self.x == math.sqrt(four)",
				"",
				"    def test_b(self):",
				"        assert 'changed'",
			)}},
			failing: []string{"TestK::test_a"},
			want: lines(
				"import pytest",
				"",
				"",
				"import math",
				"",
				"",
				"class TestK:",
				"    def setup_method(self):",
				"        self.x = 2",
				"",
				"    def test_a(self, four):",
				"        assert self.x == math.sqrt(four)",
				"",
				"    def test_b(self):",
				"        assert 1",
				"",
				"    @pytest.fixture",
				"    def four(self):",
				"        return 4",
				"",
			),
		},
		{
			name:    "a class patch named after its class takes its failing and non-test methods",
			src:     "class TestK:\n    def setup_method(self):\n        self.x = 1\n\n    def test_a(self):\n        assert self.x == 2\n\n    def test_b(self):\n        assert self.x\n",
			patches: []messages.TestPatch{{TestName: "TestK", FixedCode: "class TestK:\n    def setup_method(self):\n        self.x = 2\n\n    def test_a(self):\n        assert self.x == 2\n\n    def test_b(self):\n        assert 0\n"}},
			failing: []string{"TestK::test_a"},
			want:    "class TestK:\n    def setup_method(self):\n        self.x = 2\n\n    def test_a(self):\n        assert self.x == 2\n\n    def test_b(self):\n        assert self.x\n",
		},
		{
			name:    "after a failure of the whole run a class patch replaces its class",
			src:     "import x\n\n\nclass TestK:\n    def test_a(self):\n        assert 0\n\n    def test_b(self):\n        pass\n\n\ndef test_c():\n    pass\n",
			patches: []messages.TestPatch{{TestName: "TestK", FixedCode: "class TestK:\n    def test_a(self):\n        assert 1\n"}},
			failing: []string{"test_solution"},
			want:    "import x\n\n\nclass TestK:\n    def test_a(self):\n        assert 1\n\n\ndef test_c():\n    pass\n",
		},
		{
			name:          "a method cannot go into a class written on one line",
			src:           "class TestK: pass\n\n\ndef test_z():\n    pass\n",
			patches:       []messages.TestPatch{{TestName: "TestK::test_a", FixedCode: "def test_a(self):\n    assert 1\n"}},
			want:          "class TestK: pass\n\n\ndef test_z():\n    pass\n",
			wantUnapplied: []string{"TestK::test_a"},
			wantReasons:   []string{"its class TestK has its body on the class line"},
		},
		{
			name:    "a function patch that also redefines a passing test keeps only the failing one",
			src:     "def test_a():\n    assert 0\n\n\ndef test_b():\n    assert 1\n",
			patches: []messages.TestPatch{{TestName: "test_a", FixedCode: "def test_a():\n    assert 1\n\n\ndef test_b():\n    assert 'changed'\n"}},
			failing: []string{"test_a"},
			want:    "def test_a():\n    assert 1\n\n\ndef test_b():\n    assert 1\n",
		},
		{
			name:    "a failure of the whole run lets any test be patched",
			src:     "def test_a():\n    assert 0\n\n\ndef test_b():\n    assert 1\n",
			patches: []messages.TestPatch{{TestName: "test_b", FixedCode: "def test_b():\n    assert 2\n"}},
			failing: []string{"test_solution"},
			want:    "def test_a():\n    assert 0\n\n\ndef test_b():\n    assert 2\n",
		},
		{
			name:    "whole class appended when missing",
			src:     "def test_b():\n    pass\n",
			patches: []messages.TestPatch{{TestName: "TestA::test_y", FixedCode: "class TestA:\n    def test_y(self):\n        assert 1\n"}},
			want:    "def test_b():\n    pass\n\n\nclass TestA:\n    def test_y(self):\n        assert 1\n",
		},
		{
			name:    "missing function appended",
			src:     "def test_a():\n    pass\n\n\n",
			patches: []messages.TestPatch{{TestName: "test_new", FixedCode: "def test_new():\n    assert 1\n"}},
			want:    "def test_a():\n    pass\n\n\ndef test_new():\n    assert 1\n",
		},
		{
			name:          "patch that does not define the test",
			src:           "def test_a():\n    pass\n",
			patches:       []messages.TestPatch{{TestName: "test_a", FixedCode: "def test_other():\n    pass\n"}, {TestName: "test_a", FixedCode: "   "}},
			want:          "def test_a():\n    pass\n",
			wantUnapplied: []string{"test_a", "test_a"},
		},
		{
			name:    "fenced patch, empty name inferred",
			src:     "def test_a():\n    assert 0\n",
			patches: []messages.TestPatch{{TestName: "", FixedCode: "```python\ndef test_a():\n    assert 1\n```"}},
			failing: []string{"test_a"},
			want:    "def test_a():\n    assert 1\n",
		},
		{
			name:    "duplicate definitions: the last is replaced",
			src:     "def test_a():\n    assert 'first'\n\n\ndef test_a():\n    assert 'second'\n",
			patches: []messages.TestPatch{{TestName: "test_a", FixedCode: "def test_a():\n    assert 'fixed'\n"}},
			want:    "def test_a():\n    assert 'first'\n\n\ndef test_a():\n    assert 'fixed'\n",
		},
		{
			name:    "async def and one-line def",
			src:     "async def test_a():\n    await x()\ndef test_b(): assert 0\ndef test_c(): pass\n",
			patches: []messages.TestPatch{{TestName: "test_a", FixedCode: "async def test_a():\n    await y()\n"}, {TestName: "test_b", FixedCode: "def test_b(): assert 1\n"}},
			want:    "async def test_a():\n    await y()\ndef test_b(): assert 1\ndef test_c(): pass\n",
		},
		{
			name: "multi-line signature and string with def inside",
			src: lines(
				"def test_a(",
				"    tmp_path,",
				"):",
				"    s = '''",
				"def test_b():",
				"'''",
				"    assert s",
				"def test_b():",
				"    pass",
				"",
			),
			patches: []messages.TestPatch{{TestName: "test_a", FixedCode: "def test_a(tmp_path):\n    assert tmp_path\n"}},
			want:    "def test_a(tmp_path):\n    assert tmp_path\ndef test_b():\n    pass\n",
		},
		{
			name:    "patches applied in order",
			src:     "def test_a():\n    assert 0\n\n\ndef test_b():\n    assert 0\n",
			patches: []messages.TestPatch{{TestName: "test_b", FixedCode: "def test_b():\n    assert 2\n"}, {TestName: "test_a", FixedCode: "import math\n\n\ndef test_a():\n    assert math.pi\n"}},
			want:    "import math\n\n\ndef test_a():\n    assert math.pi\n\n\ndef test_b():\n    assert 2\n",
		},
		{
			name:          "junk test name",
			src:           "def test_a():\n    pass\n",
			patches:       []messages.TestPatch{{TestName: "test a; rm -rf /", FixedCode: "def test_a():\n    pass\n"}},
			want:          "def test_a():\n    pass\n",
			wantUnapplied: []string{"test a; rm -rf /"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			failing := tc.failing
			if failing == nil {
				failing = patchNames(tc.patches)
			}
			got, refused, _ := splice(tc.src, tc.patches, failing)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("splice mismatch (-want +got):\n%s\ngot:\n%s", diff, got)
			}
			var unapplied, reasons []string
			for _, r := range refused {
				unapplied, reasons = append(unapplied, r.Name), append(reasons, r.Reason)
			}
			if diff := cmp.Diff(tc.wantUnapplied, unapplied, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("unapplied mismatch (-want +got):\n%s", diff)
			}
			if tc.wantReasons != nil {
				if diff := cmp.Diff(tc.wantReasons, reasons); diff != "" {
					t.Errorf("reasons mismatch (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// patchNames are the test names of patches, as the failing tests of a
// round that patches exactly those.
func patchNames(ps []messages.TestPatch) []string {
	names := []string{}
	for _, p := range ps {
		names = append(names, p.TestName)
	}
	return names
}

func TestParseTestName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		classes []string
		fn      string
		ok      bool
	}{
		{"test_a", nil, "test_a", true},
		{"test_a[1-2]", nil, "test_a", true},
		{"TestA::test_b", []string{"TestA"}, "test_b", true},
		{"test_solution.py::TestA::TestB::test_c[x.y]", []string{"TestA", "TestB"}, "test_c", true},
		{"test_solution.TestA.test_b", []string{"TestA"}, "test_b", true},
		{"TestA::()::test_b", []string{"TestA"}, "test_b", true},
		{"", nil, "", false},
		{"not a name", nil, "", false},
	}
	for _, tc := range tests {
		classes, fn, ok := parseTestName(tc.in)
		if diff := cmp.Diff(tc.classes, classes, cmpopts.EquateEmpty()); diff != "" || fn != tc.fn || ok != tc.ok {
			t.Errorf("parseTestName(%q) = %v, %q, %v; want %v, %q, %v", tc.in, classes, fn, ok, tc.classes, tc.fn, tc.ok)
		}
	}
}

func TestStripFences(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"print(1)", "print(1)\n"},
		{"```python\nprint(1)\n```", "print(1)\n"},
		{"\n\n```py\nprint(1)\n```\n\n", "print(1)\n"},
		{"````\nx = '```'\n````", "x = '```'\n"},
		{"~~~\nprint(1)\n~~~", "print(1)\n"},
		{"```python\nprint(1)\n", "print(1)\n"}, // truncated: no closing fence
		{"```\n```", ""},
		{"", ""},
		{"x = 1\r\ny = 2\r\n", "x = 1\ny = 2\n"},
	}
	for _, tc := range tests {
		if got := stripFences(tc.in); got != tc.want {
			t.Errorf("stripFences(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestSpliceKeepsPythonValid parses every splice result with a real Python
// when one is installed: textual edits must leave the file compilable.
func TestSpliceKeepsPythonValid(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 not found (required in CI)")
		}
		t.Skip("python3 not found")
	}
	src := lines(
		"import pytest",
		"",
		"",
		"@pytest.mark.parametrize(\"x\", [",
		"    1,",
		"    2,",
		"])",
		"def test_a(x):",
		"    assert x",
		"",
		"",
		"class TestB:",
		"\tdef test_c(self):",
		"\t\tassert 0",
		"",
		"\tdef test_d(self):",
		"\t\tpass",
		"",
	)
	patches := [][]messages.TestPatch{
		{{TestName: "test_a", FixedCode: "@pytest.mark.parametrize('x', [3])\ndef test_a(x):\n    assert x == 3\n"}},
		{{TestName: "TestB::test_c", FixedCode: "def test_c(self):\n    s = '''\ndef test_d():\n'''\n    assert s\n"}},
		{{TestName: "TestB::test_e", FixedCode: "    def test_e(self):\n        assert 1\n"}},
		{{TestName: "test_new", FixedCode: "def test_new():\n    assert 1\n"}},
		{{TestName: "TestB::test_d", FixedCode: "class TestB:\n    def test_d(self):\n        assert 1\n"}},
		{{TestName: "TestB::test_c", FixedCode: "import math\n\nclass TestB:\n    def setup_method(self):\n        self.x = math.pi\n\n    def test_c(self):\n        assert self.x\n"}},
	}
	for i, ps := range patches {
		got, refused, _ := splice(src, ps, patchNames(ps))
		if len(refused) > 0 {
			t.Errorf("case %d: unapplied %v", i, refused)
			continue
		}
		cmd := exec.Command(py, "-c", "import ast, sys; ast.parse(sys.stdin.read())")
		cmd.Stdin = strings.NewReader(got)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("case %d: result does not parse: %v\n%s\n%s", i, err, out, got)
		}
	}
}

func FuzzSplice(f *testing.F) {
	f.Add("def test_a():\n    pass\n", "test_a", "def test_a():\n    assert 1\n")
	f.Add("class TestA:\n    def test_b(self):\n        pass\n", "TestA::test_b", "def test_b(self):\n    pass")
	f.Add("@d\n\ndef test_a(): pass\r\n", "test_a", "```\ndef test_a(): pass\n```")
	f.Fuzz(func(t *testing.T, src, name, code string) {
		got, refused, _ := splice(src, []messages.TestPatch{{TestName: name, FixedCode: code}}, []string{name})
		if len(refused) > 0 && got != src {
			t.Errorf("unapplied patch changed the file")
		}
	})
}
