package sandboxtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Run runs the suite. newBackend is called once per subtest, which closes
// the backend when it ends. Subtests run in parallel, except the one that
// sets environment variables of the test process.
func Run(t *testing.T, newBackend func(t *testing.T) sandbox.Backend) {
	t.Helper()
	// Not parallel: t.Setenv changes the whole test process.
	t.Run("WorkerEnvironmentInvisible", func(t *testing.T) { testWorkerEnvironment(t, newFixture(t, newBackend)) })

	tests := []struct {
		name string
		fn   func(*testing.T, *fixture)
	}{
		{"RunBasics", testRunBasics},
		{"Unprivileged", testUnprivileged},
		{"NoNewPrivileges", testNoNewPrivileges},
		{"RootReadOnlyFromInside", testRootReadOnly},
		{"BuildRejectsInvalidNames", testBuildValidation},
		{"RunTestsPassing", testRunTestsPassing},
		{"RunTestsFailing", testRunTestsFailing},
		{"RunTestsCollectionError", testRunTestsCollectionError},
		{"RunTestsCrashWithoutReport", testRunTestsCrash},
		{"RunTestsTimeout", testRunTestsTimeout},
		{"RunTestsSeesSamples", testRunTestsSamples},
		{"InputsReadOnly", testInputsReadOnly},
		{"OutputsCollected", testOutputsCollected},
		{"InterpreterShutdownJoinsThreads", testInterpreterShutdown},
		{"CollectDoesNotFollowSymlinks", testCollectSymlinks},
		{"RunScriptTypedOutputs", testRunScriptTypedOutputs},
		{"RunScriptProblems", testRunScriptProblems},
		{"UndeclaredOutputsNeverHide", testUndeclaredOutputsNeverHide},
		{"TimeoutKillsSpinner", testTimeoutSpinner},
		{"TimeoutKillsProcessTree", testTimeoutTree},
		{"ExitKillsBackgroundProcesses", testExitKillsBackground},
		{"CancelKillsProcessTree", testCancel},
		{"OutputCapped", testOutputCapped},
		{"NoNetwork", testNoNetwork},
		{"HostFilesInvisibleAndReadOnly", testHostFiles},
		{"RunsAreIsolated", testRunsIsolated},
		{"ForkBombContained", testForkBomb},
		{"MemoryBombContained", testMemoryBomb},
		{"MemoryBombAcrossProcessesContained", testMultiProcessMemoryBomb},
		{"CPUQuotaHolds", testCPUQuota},
		{"TmpCapped", testTmpCapped},
		{"GiantOutputContained", testGiantOutput},
		{"KillParentAndKillAllContained", testKillParentAndAll},
		{"HostSecretsUnreadable", testHostSecrets},
		{"NestedUserNamespacesRefused", testNestedUserNamespaces},
		{"KernelKeyringsRefused", testKeyringsRefused},
		{"DiskQuotaHolds", testDiskQuota},
		{"StdioConversation", testStdioConversation},
		{"StdioFailureKillsTheRun", testStdioFailureKills},
		{"StdioTimeout", testStdioTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newFixture(t, newBackend))
		})
	}
}

// fixture is a backend with its base environment.
type fixture struct {
	b   sandbox.Backend
	env string
}

func newFixture(t *testing.T, newBackend func(t *testing.T) sandbox.Backend) *fixture {
	t.Helper()
	b := newBackend(t)
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	env, err := b.Build(t.Context(), sandbox.EnvSpec{})
	if err != nil {
		t.Fatalf("Build(base environment): %v", err)
	}
	if env.ID == "" {
		t.Fatal("Build returned an empty Env.ID")
	}
	return &fixture{b: b, env: env.ID}
}

// python runs code with the environment's interpreter; edit adjusts the spec.
func (f *fixture) python(t *testing.T, code string, edit func(*sandbox.RunSpec)) sandbox.RunResult {
	t.Helper()
	spec := sandbox.RunSpec{Env: f.env, Argv: []string{"python", "-c", code}, Timeout: 60 * time.Second}
	if edit != nil {
		edit(&spec)
	}
	res, err := f.b.Run(t.Context(), spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func (f *fixture) runTests(t *testing.T, tr sandbox.TestRun) messages.TestReport {
	t.Helper()
	tr.Env = f.env
	if tr.Timeout == 0 {
		tr.Timeout = 60 * time.Second
	}
	rep, err := sandbox.RunTests(t.Context(), f.b, tr)
	if err != nil {
		t.Fatalf("RunTests: %v", err)
	}
	return rep
}

func token(t *testing.T) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "sbxtest" + hex.EncodeToString(b)
}

func dump(res sandbox.RunResult) string {
	return fmt.Sprintf("exit=%d timed_out=%v\n--- stdout ---\n%s\n--- stderr ---\n%s",
		res.ExitCode, res.TimedOut, tail(res.Stdout), tail(res.Stderr))
}

func tail(b []byte) string {
	if len(b) > 4000 {
		return "..." + string(b[len(b)-4000:])
	}
	return string(b)
}

// cases maps test names to outcomes.
func cases(rep messages.TestReport) map[string]messages.TestOutcome {
	m := map[string]messages.TestOutcome{}
	for _, c := range rep.Cases {
		m[c.Name] = c.Outcome
	}
	return m
}

func findCase(rep messages.TestReport, name string) (messages.TestCase, bool) {
	for _, c := range rep.Cases {
		if c.Name == name {
			return c, true
		}
	}
	return messages.TestCase{}, false
}

// leftovers lists processes of this host whose command line holds tok.
func leftovers(tok string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(data), tok) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(data), "\x00", " "))
		}
	}
	return out
}

// assertNoLeftovers fails if processes holding tok outlive their run. A
// backend may take a moment to finish killing; five seconds is plenty.
func assertNoLeftovers(t *testing.T, tok string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := leftovers(tok)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of the run are still alive after Run returned:\n%s", strings.Join(left, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// assertServes checks the backend still runs an ordinary command promptly.
func assertServes(t *testing.T, f *fixture) {
	t.Helper()
	start := time.Now()
	res := f.python(t, "print('still-serving')", func(s *sandbox.RunSpec) { s.Timeout = 30 * time.Second })
	if res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "still-serving") || res.TimedOut {
		t.Fatalf("backend does not serve a normal run afterwards: %s", dump(res))
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("a trivial run took %s after the bomb", d)
	}
}

func writeFile(t *testing.T, path, content string, perm os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
}

// worldReadableTempDir is a t.TempDir the sandbox user may read (when it
// is bound in): inputs must be readable whoever the sandbox runs as.
func worldReadableTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	return dir
}

func testWorkerEnvironment(t *testing.T, f *fixture) {
	secret := token(t)
	t.Setenv("AUTOCODER_SANDBOXTEST_SECRET", secret)
	t.Setenv("OPENAI_API_KEY", "sk-"+secret)
	res := f.python(t, `
import json, os, sys
print(json.dumps(dict(os.environ)))
print(open("/proc/self/environ").read())
print(open("/proc/1/environ").read() if os.access("/proc/1/environ", os.R_OK) else "")
# The worker's own pid, as the host numbers it: another process, or none,
# in the sandbox's pid namespace.
try:
    print(open("/proc/%s/environ" % sys.argv[1]).read())
except OSError as e:
    print("worker environ blocked", type(e).__name__)
`, func(s *sandbox.RunSpec) {
		s.EnvVars = map[string]string{"GIVEN_VAR": "given-value"}
		s.Argv = append(s.Argv, strconv.Itoa(os.Getpid()))
	})
	if res.ExitCode != 0 {
		t.Fatalf("run failed: %s", dump(res))
	}
	out := string(res.Stdout) + string(res.Stderr)
	if strings.Contains(out, secret) {
		t.Errorf("a worker environment variable reached the sandbox:\n%s", out)
	}
	if strings.Contains(out, "OPENAI_API_KEY") {
		t.Errorf("OPENAI_API_KEY reached the sandbox:\n%s", out)
	}
	if !strings.Contains(out, `"GIVEN_VAR": "given-value"`) {
		t.Errorf("RunSpec.EnvVars did not reach the sandbox:\n%s", out)
	}
	if !strings.Contains(out, `"HOME"`) || !strings.Contains(out, `"PATH"`) {
		t.Errorf("PATH and HOME are missing in the sandbox:\n%s", out)
	}
	assertServes(t, f)
}

func testRunBasics(t *testing.T, f *fixture) {
	res := f.python(t, `
import os, sys
assert os.getcwd() == "/workspace", os.getcwd()
print(open("data/in.txt").read())
print("to-stderr", file=sys.stderr)
open("data/result.txt", "w").write("result:" + os.environ["GREETING"])
sys.exit(3)
`, func(s *sandbox.RunSpec) {
		s.Files = map[string][]byte{"data/in.txt": []byte("hello from the workspace")}
		s.EnvVars = map[string]string{"GREETING": "hi"}
		s.Collect = []string{"data/result.txt", "data/in.txt", "missing.txt"}
	})
	if res.ExitCode != 3 {
		t.Fatalf("exit code = %d, want 3: %s", res.ExitCode, dump(res))
	}
	if !strings.Contains(string(res.Stdout), "hello from the workspace") || strings.Contains(string(res.Stdout), "to-stderr") {
		t.Errorf("stdout = %q", res.Stdout)
	}
	if !strings.Contains(string(res.Stderr), "to-stderr") {
		t.Errorf("stderr = %q", res.Stderr)
	}
	want := map[string]string{"data/result.txt": "result:hi", "data/in.txt": "hello from the workspace"}
	got := map[string]string{}
	for k, v := range res.Files {
		got[k] = string(v)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("collected files (-want +got):\n%s", diff)
	}
	if res.TimedOut || res.Truncated {
		t.Errorf("TimedOut=%v Truncated=%v, want false", res.TimedOut, res.Truncated)
	}
	if res.Duration <= 0 {
		t.Errorf("Duration = %v", res.Duration)
	}
}

func testUnprivileged(t *testing.T, f *fixture) {
	res := f.python(t, `
import os
status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
print("uid=%d euid=%d" % (os.getuid(), os.geteuid()))
print("capeff=" + status["CapEff"].strip())
`, nil)
	out := string(res.Stdout)
	if res.ExitCode != 0 {
		t.Fatalf("run failed: %s", dump(res))
	}
	if strings.Contains(out, "uid=0 ") || strings.Contains(out, "euid=0\n") {
		t.Errorf("the sandbox runs as root:\n%s", out)
	}
	if !strings.Contains(out, "capeff=0000000000000000") {
		t.Errorf("the sandbox has capabilities:\n%s", out)
	}
}

// testNoNewPrivileges checks that nothing in the sandbox can gain
// privileges through a setuid binary or file capabilities.
func testNoNewPrivileges(t *testing.T, f *fixture) {
	res := f.python(t, `
for line in open("/proc/self/status"):
    if line.startswith("NoNewPrivs:"):
        print("nnp=" + line.split(":", 1)[1].strip())
`, nil)
	if res.ExitCode != 0 {
		t.Fatalf("run failed: %s", dump(res))
	}
	if !strings.Contains(string(res.Stdout), "nnp=1") {
		t.Errorf("no_new_privs is not set in the sandbox: %s", dump(res))
	}
}

// testRootReadOnly writes, from inside, to the root file system and the
// system directories: every attempt fails (the host-side view of the same
// is HostFilesInvisibleAndReadOnly).
func testRootReadOnly(t *testing.T, f *fixture) {
	tok := token(t)
	targets := []string{"/" + tok, "/usr/" + tok, "/usr/lib/" + tok, "/usr/bin/" + tok, "/etc/" + tok,
		"/opt/" + tok, "/var/" + tok}
	res := f.python(t, fmt.Sprintf(`
import errno, os
def attempt(what, fn):
    try:
        fn()
        print("WROTE", what)
    except OSError as e:
        print("blocked", what, errno.errorcode.get(e.errno, e.errno))
for t in %q.split(","):
    attempt(t, lambda: open(t, "w").write("planted"))
    attempt(t + "-dir", lambda: os.mkdir(t + "-dir"))
attempt("/etc/passwd", lambda: open("/etc/passwd", "a").write("evil::0:0::/:/bin/sh\n"))
`, strings.Join(targets, ",")), nil)
	out := string(res.Stdout)
	if res.ExitCode != 0 {
		t.Fatalf("run failed: %s", dump(res))
	}
	if strings.Contains(out, "WROTE") {
		t.Errorf("the sandbox wrote to its root file system:\n%s", out)
	}
	if n := strings.Count(out, "blocked"); n != 2*len(targets)+1 {
		t.Errorf("%d writes blocked, want %d:\n%s", n, 2*len(targets)+1, out)
	}
	assertServes(t, f)
}

func testBuildValidation(t *testing.T, f *fixture) {
	for _, name := range []string{
		"../../etc/passwd", "/tmp/evil.whl", "https://evil.example/x.whl", "git+https://x/y.git",
		"pandas; rm -rf /", "--index-url=http://evil", "-e .", "pandas @ file:///etc", "$(id)", "",
	} {
		_, err := f.b.Build(t.Context(), sandbox.EnvSpec{Packages: []string{name}})
		var inv *sandbox.InvalidPackageError
		if !errors.As(err, &inv) || !errors.Is(err, sandbox.ErrInvalidPackage) {
			t.Errorf("Build(%q) error = %v, want an *InvalidPackageError", name, err)
			continue
		}
		if !slicesContains(inv.Packages, name) {
			t.Errorf("Build(%q): InvalidPackageError.Packages = %q, want it named", name, inv.Packages)
		}
	}
	again, err := f.b.Build(t.Context(), sandbox.EnvSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != f.env {
		t.Errorf("the same spec built twice gave %q and %q", f.env, again.ID)
	}
}

func slicesContains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

const addCode = "def add(a, b):\n    return a + b\n"

func testRunTestsPassing(t *testing.T, f *fixture) {
	rep := f.runTests(t, sandbox.TestRun{Code: addCode, Tests: `
import pytest
from solution import add

def test_add():
    assert add(2, 3) == 5

def test_add_negative():
    assert add(-2, -3) == -5

@pytest.mark.parametrize("a,b", [(1, 2), (3, 4)])
def test_param(a, b):
    assert add(a, b) == a + b

def test_skipped():
    pytest.skip("not today")
`})
	want := map[string]messages.TestOutcome{
		"test_add": messages.OutcomePassed, "test_add_negative": messages.OutcomePassed,
		"test_param[1-2]": messages.OutcomePassed, "test_param[3-4]": messages.OutcomePassed,
		"test_skipped": messages.OutcomeSkipped,
	}
	if diff := cmp.Diff(want, cases(rep)); diff != "" {
		t.Errorf("cases (-want +got):\n%s\noutput:\n%s", diff, rep.Output)
	}
	if rep.Passed != 4 || rep.Failed != 0 || rep.Errors != 0 || rep.Skipped != 1 || !rep.OK() {
		t.Errorf("report = %+v, want 4 passed, 1 skipped, OK", rep)
	}
	if c, _ := findCase(rep, "test_add"); c.ClassName != "test_solution" {
		t.Errorf("test_add classname = %q, want test_solution", c.ClassName)
	}
}

func testRunTestsFailing(t *testing.T, f *fixture) {
	rep := f.runTests(t, sandbox.TestRun{Code: "def add(a, b):\n    return a - b\n", Tests: `
import pytest
from solution import add

def test_add():
    assert add(2, 3) == 5

def test_zero():
    assert add(0, 0) == 0

@pytest.fixture
def broken():
    raise RuntimeError("fixture exploded")

def test_uses_broken_fixture(broken):
    assert True
`})
	want := map[string]messages.TestOutcome{
		"test_add": messages.OutcomeFailed, "test_zero": messages.OutcomePassed,
		"test_uses_broken_fixture": messages.OutcomeError,
	}
	if diff := cmp.Diff(want, cases(rep)); diff != "" {
		t.Errorf("cases (-want +got):\n%s\noutput:\n%s", diff, rep.Output)
	}
	if rep.Passed != 1 || rep.Failed != 1 || rep.Errors != 1 || rep.OK() || rep.ExitCode == 0 {
		t.Errorf("report = %+v, want 1 passed, 1 failed, 1 error, not OK", rep)
	}
	c, _ := findCase(rep, "test_add")
	if !strings.Contains(c.Details, "assert") || !strings.Contains(c.Details+c.Message, "-1") {
		t.Errorf("test_add details do not show the assertion:\nmessage: %s\ndetails: %s", c.Message, c.Details)
	}
	if c, _ := findCase(rep, "test_uses_broken_fixture"); !strings.Contains(c.Details+c.Message, "fixture exploded") {
		t.Errorf("fixture error details = %q", c.Details)
	}
	if !strings.Contains(rep.Output, "test_add") {
		t.Errorf("output does not mention the failing test:\n%s", rep.Output)
	}
}

func testRunTestsCollectionError(t *testing.T, f *fixture) {
	rep := f.runTests(t, sandbox.TestRun{Code: addCode, Tests: `
from solution import subtract

def test_subtract():
    assert subtract(3, 2) == 1
`})
	if rep.Errors != 1 || rep.Passed != 0 || rep.OK() || len(rep.Cases) != 1 {
		t.Fatalf("report = %+v, want exactly one error case", rep)
	}
	c := rep.Cases[0]
	if c.Outcome != messages.OutcomeError || !strings.Contains(c.Name, "test_solution") {
		t.Errorf("case = %+v, want an error named after test_solution", c)
	}
	if !strings.Contains(c.Message+c.Details, "ImportError") || !strings.Contains(c.Message+c.Details, "subtract") {
		t.Errorf("the import error is not reported:\nmessage: %s\ndetails: %s", c.Message, c.Details)
	}
}

func testRunTestsCrash(t *testing.T, f *fixture) {
	// Dies while pytest collects (and captures) it: no report, no output.
	rep := f.runTests(t, sandbox.TestRun{Code: addCode, Tests: "import os\nos._exit(7)\n"})
	if rep.ExitCode != 7 || rep.TimedOut {
		t.Errorf("ExitCode=%d TimedOut=%v, want 7 and false", rep.ExitCode, rep.TimedOut)
	}
	if rep.Errors != 1 || len(rep.Cases) != 1 || rep.OK() {
		t.Fatalf("report = %+v, want one error case", rep)
	}
	if c := rep.Cases[0]; !strings.Contains(c.Message, "7") || c.Outcome != messages.OutcomeError {
		t.Errorf("case %+v does not report the exit code", c)
	}
}

func testRunTestsTimeout(t *testing.T, f *fixture) {
	start := time.Now()
	rep := f.runTests(t, sandbox.TestRun{Code: addCode, Timeout: 3 * time.Second, Tests: `
def test_forever():
    while True:
        pass
`})
	if !rep.TimedOut || rep.OK() || rep.Errors != 1 {
		t.Errorf("report = %+v, want TimedOut with one error case", rep)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("RunTests took %s with a 3s timeout", d)
	}
}

func testRunTestsSamples(t *testing.T, f *fixture) {
	dir := worldReadableTempDir(t)
	sample := filepath.Join(dir, "orders.csv")
	writeFile(t, sample, "qty,price\n2,1.5\n4,2.0\n", 0o644)
	rep := f.runTests(t, sandbox.TestRun{
		Inputs: map[string]string{"sales.csv": sample},
		Code: `
import csv
def revenue(path):
    with open(path) as f:
        return sum(int(r["qty"]) * float(r["price"]) for r in csv.DictReader(f))
`,
		Tests: `
from solution import revenue
def test_revenue():
    assert revenue("/var/inputs/sales.csv") == 11.0
`})
	if !rep.OK() || rep.Passed != 1 {
		t.Errorf("report = %+v\n%s", rep, rep.Output)
	}
}

func testInputsReadOnly(t *testing.T, f *fixture) {
	dir := worldReadableTempDir(t)
	file := filepath.Join(dir, "data.csv")
	writeFile(t, file, "a,b\n1,2\n", 0o644)
	tree := filepath.Join(dir, "tree")
	writeFile(t, filepath.Join(tree, "x.txt"), "x", 0o644)
	writeFile(t, filepath.Join(tree, "sub", "y.txt"), "y", 0o644)
	res := f.python(t, `
import os
def attempt(name, fn):
    try:
        fn()
        print(name, "ALLOWED")
    except OSError as e:
        print(name, "denied", e.errno)
print("content", repr(open("/var/inputs/data.csv").read()))
print("tree", sorted(os.listdir("/var/inputs/tree")), open("/var/inputs/tree/sub/y.txt").read())
attempt("append", lambda: open("/var/inputs/data.csv", "a").write("evil"))
attempt("truncate", lambda: open("/var/inputs/data.csv", "w"))
attempt("unlink", lambda: os.unlink("/var/inputs/data.csv"))
attempt("create", lambda: open("/var/inputs/new.txt", "w"))
attempt("create_in_dir", lambda: open("/var/inputs/tree/new.txt", "w"))
attempt("rename", lambda: os.rename("/var/inputs/tree/x.txt", "/var/inputs/tree/z.txt"))
attempt("chmod", lambda: os.chmod("/var/inputs/data.csv", 0o777))
`, func(s *sandbox.RunSpec) {
		s.Inputs = map[string]string{"data.csv": file, "tree": tree}
	})
	out := string(res.Stdout)
	if res.ExitCode != 0 {
		t.Fatalf("run failed: %s", dump(res))
	}
	if !strings.Contains(out, `content 'a,b\n1,2\n'`) || !strings.Contains(out, "tree ['sub', 'x.txt'] y") {
		t.Errorf("inputs not readable:\n%s", out)
	}
	if strings.Contains(out, "ALLOWED") {
		t.Errorf("an input could be modified:\n%s", out)
	}
	if data, _ := os.ReadFile(file); string(data) != "a,b\n1,2\n" {
		t.Errorf("the host file changed: %q", data)
	}
	if _, err := os.Stat(filepath.Join(tree, "x.txt")); err != nil {
		t.Errorf("the host tree changed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tree, "new.txt")); err == nil {
		t.Error("a file was created in the host tree")
	}
}

func testOutputsCollected(t *testing.T, f *fixture) {
	secretDir := t.TempDir()
	secretPath := filepath.Join(secretDir, "secret.txt")
	secret := token(t)
	writeFile(t, secretPath, secret, 0o644)
	res := f.python(t, fmt.Sprintf(`
import os
open("/var/outputs/answer", "w").write("42\n")
os.makedirs("/var/outputs/charts/deep")
open("/var/outputs/charts/a.png", "wb").write(b"\x89PNG")
open("/var/outputs/charts/deep/b.txt", "w").write("b")
os.makedirs("/var/outputs/empty")
os.symlink(%q, "/var/outputs/link")
os.symlink("/etc/passwd", "/var/outputs/passwd_link")
os.mkfifo("/var/outputs/fifo")
`, secretPath), func(s *sandbox.RunSpec) { s.CollectOutputs = true })
	if res.ExitCode != 0 {
		t.Fatalf("run failed: %s", dump(res))
	}
	got := map[string]string{}
	for k, v := range res.Outputs {
		got[k] = string(v)
	}
	want := map[string]string{"answer": "42\n", "charts/a.png": "\x89PNG", "charts/deep/b.txt": "b"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Outputs (-want +got):\n%s", diff)
	}
	dirs := append([]string{}, res.OutputDirs...)
	sort.Strings(dirs)
	if diff := cmp.Diff([]string{"charts", "charts/deep", "empty"}, dirs); diff != "" {
		t.Errorf("OutputDirs (-want +got):\n%s", diff)
	}
	for k, v := range res.Outputs {
		if strings.Contains(string(v), secret) || strings.Contains(string(v), "root:") {
			t.Errorf("output %s followed a symlink out of the sandbox", k)
		}
	}
}

func testCollectSymlinks(t *testing.T, f *fixture) {
	secretDir := t.TempDir()
	secretPath := filepath.Join(secretDir, "secret.txt")
	secret := token(t)
	writeFile(t, secretPath, secret, 0o644)
	res := f.python(t, fmt.Sprintf(`
import os
os.makedirs(".harness", exist_ok=True)
os.symlink(%q, ".harness/junit.xml")
os.symlink("/etc/passwd", "passwd.txt")
os.symlink("..", "up")
os.mkfifo("fifo")
`, secretPath), func(s *sandbox.RunSpec) {
		s.Collect = []string{".harness/junit.xml", "passwd.txt", "up/etc/passwd", "fifo"}
	})
	if res.ExitCode != 0 {
		t.Fatalf("run failed: %s", dump(res))
	}
	for name, data := range res.Files {
		if strings.Contains(string(data), secret) || strings.Contains(string(data), "root:") {
			t.Errorf("Collect of %s read a host file through a symlink", name)
		}
	}
}

const typedScript = `
import argparse, datetime, os
p = argparse.ArgumentParser()
p.add_argument("--threshold", type=float, required=True)
p.add_argument("--label", required=True)
p.add_argument("--offset", type=int, required=True)
a = p.parse_args()
rows = open("/var/inputs/sales.csv").read().splitlines()[1:]
qty = [int(r.split(",")[0]) for r in rows]
def out(name, value):
    with open(os.path.join("/var/outputs", name), "w") as f:
        f.write(str(value))
out("count", len(qty) + a.offset)
out("mean", sum(qty) / len(qty))
out("label", a.label + "\n")
out("big", "true" if sum(qty) / len(qty) > a.threshold else "false")
out("when", datetime.datetime(2024, 5, 1, 13, 30, tzinfo=datetime.timezone.utc).isoformat())
out("took", "PT1H30M")
out("report", "qty\n" + "\n".join(map(str, qty)))
os.makedirs("/var/outputs/charts")
out("charts/a.txt", "aa")
out("charts/b.txt", "bbb")
`

func testRunScriptTypedOutputs(t *testing.T, f *fixture) {
	dir := worldReadableTempDir(t)
	sample := filepath.Join(dir, "orders.csv")
	writeFile(t, sample, "qty\n2\n4\n", 0o644)
	out, err := sandbox.RunScript(t.Context(), f.b, sandbox.ScriptRun{
		Env: f.env, Code: typedScript, Timeout: 60 * time.Second,
		Args:   map[string]string{"threshold": "2.5", "label": "a b; $(id)", "offset": "-10"},
		Inputs: map[string]string{"sales.csv": sample},
		Outputs: map[string]messages.Type{
			"count": messages.TypeInt, "mean": messages.TypeFloat, "label": messages.TypeStr,
			"big": messages.TypeBool, "when": messages.TypeDatetime, "took": messages.TypeTimedelta,
			"report": messages.TypeFile, "charts": messages.TypeDir,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !out.OK || len(out.Problems) > 0 || out.ExitCode != 0 {
		t.Fatalf("RunScript = %+v", out)
	}
	want := map[string]any{
		"count": int64(-8), "mean": 3.0, "label": "a b; $(id)", "big": true,
		"when": "2024-05-01T13:30:00Z", "took": 5400.0,
		"report": sandbox.FileValue{Path: "report", Size: 7, SHA256: fmt.Sprintf("%x", sha256.Sum256([]byte("qty\n2\n4")))},
		"charts": sandbox.DirValue{Path: "charts", Files: 2, Size: 5},
	}
	if diff := cmp.Diff(want, out.Outputs); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
}

func testRunScriptProblems(t *testing.T, f *fixture) {
	out, err := sandbox.RunScript(t.Context(), f.b, sandbox.ScriptRun{
		Env: f.env, Timeout: 60 * time.Second,
		Code: `
import os
open("/var/outputs/good", "w").write("7")
open("/var/outputs/bad_int", "w").write("seven")
os.makedirs("/var/outputs/not_a_file")
`,
		Outputs: map[string]messages.Type{
			"good": messages.TypeInt, "bad_int": messages.TypeInt, "never_written": messages.TypeFloat,
			"not_a_file": messages.TypeFile,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.OK || out.ExitCode != 0 {
		t.Fatalf("RunScript = %+v, want not OK with exit 0", out)
	}
	problems := strings.Join(out.Problems, "\n")
	for _, name := range []string{"bad_int", "never_written", "not_a_file"} {
		if !strings.Contains(problems, name) {
			t.Errorf("no problem names %s:\n%s", name, problems)
		}
	}
	if strings.Contains(problems, "good") || out.Outputs["good"] != int64(7) {
		t.Errorf("good output: problems %q, value %v", problems, out.Outputs["good"])
	}

	out, err = sandbox.RunScript(t.Context(), f.b, sandbox.ScriptRun{
		Env: f.env, Timeout: 60 * time.Second,
		Code:    "raise ValueError('no data')\n",
		Outputs: map[string]messages.Type{"n": messages.TypeInt},
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.OK || out.ExitCode != 1 || !strings.Contains(strings.Join(out.Problems, "\n"), "ValueError") {
		t.Errorf("a crashing script: %+v", out)
	}
}

func testTimeoutSpinner(t *testing.T, f *fixture) {
	tok := token(t)
	start := time.Now()
	res := f.python(t, "while True:\n    pass\n", func(s *sandbox.RunSpec) {
		s.Argv = append(s.Argv, tok)
		s.Timeout = 2 * time.Second
	})
	if !res.TimedOut {
		t.Errorf("TimedOut = false: %s", dump(res))
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("Run took %s with a 2s timeout", d)
	}
	assertNoLeftovers(t, tok)
	assertServes(t, f)
}

// treeScript starts children that try to outlive the run: plain children,
// a grandchild in its own session (a daemon), and a child ignoring SIGTERM.
const treeScript = `
import os, signal, subprocess, sys, time
tok = sys.argv[1]
for _ in range(3):
    subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(1)", tok])
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        while True:
            time.sleep(1)
    os._exit(0)
if os.fork() == 0:
    while True:
        pass
print("children started", flush=True)
`

func testTimeoutTree(t *testing.T, f *fixture) {
	tok := token(t)
	res := f.python(t, treeScript+"while True:\n    time.sleep(1)\n", func(s *sandbox.RunSpec) {
		s.Argv = append(s.Argv, tok)
		s.Timeout = 4 * time.Second
	})
	if !res.TimedOut {
		t.Errorf("TimedOut = false: %s", dump(res))
	}
	if !strings.Contains(string(res.Stdout), "children started") {
		t.Errorf("the children did not start: %s", dump(res))
	}
	assertNoLeftovers(t, tok)
	assertServes(t, f)
}

func testExitKillsBackground(t *testing.T, f *fixture) {
	tok := token(t)
	res := f.python(t, treeScript+"sys.exit(0)\n", func(s *sandbox.RunSpec) {
		s.Argv = append(s.Argv, tok)
		s.Timeout = 30 * time.Second
	})
	if res.TimedOut || res.ExitCode != 0 {
		t.Errorf("run: %s", dump(res))
	}
	assertNoLeftovers(t, tok)
}

func testCancel(t *testing.T, f *fixture) {
	tok := token(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// Cancel once the tree is up: the run reports it on stdout, which is
	// not observable before Run returns, so give it a fixed head start.
	timer := time.AfterFunc(2*time.Second, cancel)
	defer timer.Stop()
	start := time.Now()
	_, err := f.b.Run(ctx, sandbox.RunSpec{Env: f.env, Argv: []string{"python", "-c",
		treeScript + "while True:\n    time.sleep(1)\n", tok}, Timeout: 60 * time.Second})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run after cancel: err = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Run took %s to notice the cancellation", d)
	}
	assertNoLeftovers(t, tok)
	assertServes(t, f)
}

func testOutputCapped(t *testing.T, f *fixture) {
	const limit = 64 << 10
	res := f.python(t, `
import sys
sys.stdout.write("BEGIN\n")
chunk = "x" * 1023 + "\n"
for _ in range(20 * 1024):
    sys.stdout.write(chunk)
sys.stdout.write("END\n")
for _ in range(5 * 1024):
    sys.stderr.write(chunk)
sys.stderr.write("ERR-END\n")
`, func(s *sandbox.RunSpec) { s.OutputLimit = limit })
	if res.ExitCode != 0 {
		t.Fatalf("run failed: %s", dump(res))
	}
	if !res.Truncated {
		t.Error("Truncated = false after 25 MiB of output")
	}
	// A marker between head and tail may add a little.
	if len(res.Stdout) > limit+1024 || len(res.Stderr) > limit+1024 {
		t.Errorf("len(stdout)=%d len(stderr)=%d, want about %d", len(res.Stdout), len(res.Stderr), limit)
	}
	if !strings.HasPrefix(string(res.Stdout), "BEGIN\n") || !strings.HasSuffix(string(res.Stdout), "END\n") {
		t.Errorf("stdout lost its head or tail: %q ... %q", res.Stdout[:min(20, len(res.Stdout))], tail(res.Stdout[max(0, len(res.Stdout)-20):]))
	}
	if !strings.HasSuffix(string(res.Stderr), "ERR-END\n") {
		t.Errorf("stderr lost its tail")
	}
}

func testNoNetwork(t *testing.T, f *fixture) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int32
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	defer func() { ln.Close(); wg.Wait() }()
	port := ln.Addr().(*net.TCPAddr).Port
	res := f.python(t, fmt.Sprintf(`
import socket
def attempt(name, fn):
    try:
        fn()
        print(name, "CONNECTED")
    except OSError as e:
        print(name, "blocked", type(e).__name__)
attempt("host-loopback", lambda: socket.create_connection(("127.0.0.1", %d), timeout=3))
attempt("dns", lambda: socket.getaddrinfo("example.com", 80))
attempt("public-ip", lambda: socket.create_connection(("1.1.1.1", 53), timeout=3))
`, port), nil)
	out := string(res.Stdout)
	if res.ExitCode != 0 {
		t.Fatalf("run failed: %s", dump(res))
	}
	if strings.Contains(out, "CONNECTED") || accepted.Load() > 0 {
		t.Errorf("the sandbox reached the network (%d connections to the host listener):\n%s", accepted.Load(), out)
	}
	if strings.Count(out, "blocked") != 3 {
		t.Errorf("unexpected output:\n%s", out)
	}
	assertServes(t, f)
}

func testHostFiles(t *testing.T, f *fixture) {
	dir := t.TempDir()
	secretPath := filepath.Join(dir, "secret.txt")
	secret := token(t)
	// World-readable on purpose: invisible, not merely forbidden.
	writeFile(t, secretPath, secret, 0o644)
	_ = os.Chmod(dir, 0o755)
	targets := []string{
		filepath.Join(dir, "planted.txt"), "/usr/autocoder-sandboxtest", "/etc/autocoder-sandboxtest",
		"/autocoder-sandboxtest", "/usr/lib/autocoder-sandboxtest",
	}
	res := f.python(t, fmt.Sprintf(`
import os
secret_path, targets = %q, %q.split(",")
try:
    print("secret", open(secret_path).read())
except OSError as e:
    print("secret blocked", type(e).__name__)
for t in targets:
    try:
        with open(t, "w") as f:
            f.write("planted")
        print("wrote", t)
    except OSError as e:
        print("write blocked", type(e).__name__)
`, secretPath, strings.Join(targets, ",")), nil)
	if res.ExitCode != 0 {
		t.Fatalf("run failed: %s", dump(res))
	}
	if strings.Contains(string(res.Stdout), secret) {
		t.Errorf("the sandbox read a host file:\n%s", res.Stdout)
	}
	for _, target := range targets {
		if data, err := os.ReadFile(target); err == nil && string(data) == "planted" {
			os.Remove(target)
			t.Errorf("the sandbox wrote the host file %s", target)
		}
	}
	assertServes(t, f)
}

func testRunsIsolated(t *testing.T, f *fixture) {
	code := `
import os, sys, time
me, other = sys.argv[1], sys.argv[2]
open("/tmp/" + me, "w").write(me)
open("/workspace/" + me, "w").write(me)
time.sleep(1.5)
seen = []
for d in ("/tmp", "/workspace", "/var/outputs"):
    seen += [n for n in os.listdir(d) if n == other]
procs = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            procs.append(open("/proc/%s/cmdline" % pid).read())
        except OSError:
            pass
print("seen", seen, "procs", any(other in p and me not in p for p in procs))
`
	a, b := token(t), token(t)
	var wg sync.WaitGroup
	results := make([]sandbox.RunResult, 2)
	errs := make([]error, 2)
	for i, pair := range [][2]string{{a, b}, {b, a}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = f.b.Run(t.Context(), sandbox.RunSpec{Env: f.env,
				Argv: []string{"python", "-c", code, pair[0], pair[1]}, Timeout: 60 * time.Second})
		}()
	}
	wg.Wait()
	for i, res := range results {
		if errs[i] != nil {
			t.Fatalf("Run: %v", errs[i])
		}
		if res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "seen [] procs False") {
			t.Errorf("run %d saw the other one: %s", i, dump(res))
		}
	}
}

func testForkBomb(t *testing.T, f *fixture) {
	tok := token(t)
	start := time.Now()
	res := f.python(t, `
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
`, func(s *sandbox.RunSpec) {
		s.Argv = append(s.Argv, tok)
		s.Timeout = 5 * time.Second
	})
	if d := time.Since(start); d > 60*time.Second {
		t.Errorf("the fork bomb run took %s with a 5s timeout", d)
	}
	if res.ExitCode == 0 && !res.TimedOut {
		t.Errorf("a fork bomb ended normally? %s", dump(res))
	}
	assertNoLeftovers(t, tok)
	assertServes(t, f)
}

func testMemoryBomb(t *testing.T, f *fixture) {
	const memory = 256 << 20
	res := f.python(t, `
import sys
hoard = []
while True:
    hoard.append(bytearray(16 << 20))
    print(len(hoard) * 16, flush=True)
`, func(s *sandbox.RunSpec) {
		s.Memory = memory
		s.Timeout = 60 * time.Second
	})
	if res.ExitCode == 0 || res.TimedOut {
		t.Errorf("the memory bomb was not stopped by the memory limit: %s", dump(res))
	}
	lines := strings.Fields(string(res.Stdout))
	t.Logf("allocated before the limit: %v MiB; exit %d; %s", lines[max(0, len(lines)-1):], res.ExitCode,
		strings.TrimSpace(tail(res.Stderr[max(0, len(res.Stderr)-200):])))
	if len(lines) > 0 {
		last, _ := strconv.Atoi(lines[len(lines)-1])
		if int64(last)<<20 > memory+64<<20 {
			t.Errorf("the run allocated %d MiB with a %d MiB limit", last, memory>>20)
		}
	}
	assertServes(t, f)
}

// testMultiProcessMemoryBomb starts several processes that each stay
// under the per-process address-space limit but together go well past the
// sandbox's memory: the sandbox as a whole is capped (a cgroup), so some
// are killed or fail to allocate, and the worker serves the next run.
func testMultiProcessMemoryBomb(t *testing.T, f *fixture) {
	const memory = 256 << 20
	res := f.python(t, `
import subprocess, sys
# Each child writes 180 MiB (b"x" * n touches every page) and holds it.
child = ("import sys, time\n"
         "try:\n    hoard = b'x' * (180 << 20)\n"
         "except MemoryError:\n    print('MemoryError', flush=True)\n    sys.exit(3)\n"
         "print('holding', flush=True)\ntime.sleep(5)\n")
print("START", flush=True)
procs = [subprocess.Popen([sys.executable, "-c", child]) for _ in range(4)]
rcs = [p.wait() for p in procs]
print("rcs", rcs, flush=True)
if all(rc == 0 for rc in rcs):
    print("ALL_SURVIVED", flush=True)
`, func(s *sandbox.RunSpec) {
		s.Memory = memory
		s.Timeout = 60 * time.Second
	})
	out := string(res.Stdout)
	t.Logf("4 x 180 MiB under %d MiB: exit %d, timed out %v, stdout %q", memory>>20, res.ExitCode, res.TimedOut, out)
	if !strings.Contains(out, "START") {
		t.Fatalf("the run did not start its processes: %s", dump(res))
	}
	if strings.Contains(out, "ALL_SURVIVED") {
		t.Errorf("4 processes held 720 MiB together under a %d MiB sandbox limit: %s", memory>>20, dump(res))
	}
	if res.TimedOut {
		t.Errorf("the memory bomb ran into its timeout instead of being stopped: %s", dump(res))
	}
	assertServes(t, f)
}

// testCPUQuota runs two processes that spin for 3 s of wall time in a
// sandbox granted half a CPU, and measures from inside the CPU time they
// used. The quota is an upper bound the kernel enforces, so a busy host
// only lowers the ratio; the tolerance (0.8 CPU-s per wall-second plus
// 0.3 s, against 0.5 granted and up to 2 unlimited on two cores) absorbs
// the CFS period's granularity and interpreter start-up.
func testCPUQuota(t *testing.T, f *fixture) {
	const cpus = 0.5
	res := f.python(t, `
import os, subprocess, sys, time
spin = "import sys, time\nend = time.monotonic() + float(sys.argv[1])\nwhile time.monotonic() < end:\n    pass\n"
start = time.monotonic()
procs = [subprocess.Popen([sys.executable, "-c", spin, "3"]) for _ in range(2)]
rcs = [p.wait() for p in procs]
wall = time.monotonic() - start
t = os.times()
print("rcs=%s cpu %.3f wall %.3f" % ("".join(str(rc) for rc in rcs), t.children_user + t.children_system, wall))
`, func(s *sandbox.RunSpec) {
		s.CPUs = cpus
		s.Timeout = 60 * time.Second
	})
	if res.ExitCode != 0 || res.TimedOut {
		t.Fatalf("run failed: %s", dump(res))
	}
	var rcs string
	var cpu, wall float64
	if _, err := fmt.Sscanf(strings.TrimSpace(string(res.Stdout)), "rcs=%s cpu %g wall %g", &rcs, &cpu, &wall); err != nil {
		t.Fatalf("unexpected output %q: %v", res.Stdout, err)
	}
	t.Logf("2 spinners, %.1f CPUs: %.2f CPU-s in %.2f s (%.2f CPU-s per second)", cpus, cpu, wall, cpu/wall)
	if rcs != "00" || wall < 3 || cpu <= 0 {
		t.Fatalf("the spinners did not run: %s", dump(res))
	}
	if limit := 0.8*wall + 0.3; cpu > limit {
		t.Errorf("two spinners used %.2f CPU-s in %.2f s with CPUs=%.1f (at most %.2f allowed)", cpu, wall, cpus, limit)
	}
	assertServes(t, f)
}

func testTmpCapped(t *testing.T, f *fixture) {
	res := f.python(t, `
import errno, os
total, err = 0, "none"
chunk = b"\0" * (1 << 20)
try:
    i = 0
    while total < (1 << 30):
        with open("/tmp/fill%d" % i, "wb") as f:
            for _ in range(64):
                f.write(chunk)
                f.flush()
                total += len(chunk)
        i += 1
except OSError as e:
    err = errno.errorcode.get(e.errno, str(e.errno))
print("total", total >> 20, "err", err)
`, nil)
	if res.ExitCode != 0 {
		t.Fatalf("run failed: %s", dump(res))
	}
	out := string(res.Stdout)
	t.Logf("/tmp: %s", strings.TrimSpace(out))
	if !strings.Contains(out, "err ENOSPC") && !strings.Contains(out, "err EFBIG") && !strings.Contains(out, "err EDQUOT") {
		t.Errorf("/tmp took 1 GiB without running out of space:\n%s", out)
	}
	assertServes(t, f)
}

// testGiantOutput writes 1 GiB to stdout: the run ends (normally, or at its
// timeout), what it returns stays within the output limit with its head and
// tail, and the worker serves the next run.
func testGiantOutput(t *testing.T, f *fixture) {
	const limit = 64 << 10
	start := time.Now()
	res := f.python(t, `
import sys
out = sys.stdout.buffer
out.write(b"BEGIN\n")
chunk = b"y" * ((1 << 20) - 1) + b"\n"
for _ in range(1024):
    out.write(chunk)
out.write(b"END\n")
`, func(s *sandbox.RunSpec) {
		s.OutputLimit = limit
		s.Timeout = 120 * time.Second
	})
	t.Logf("1 GiB of output: exit %d, timed out %v, %s", res.ExitCode, res.TimedOut, time.Since(start))
	if !res.Truncated {
		t.Errorf("Truncated = false after 1 GiB of output")
	}
	if len(res.Stdout) > limit+1024 || len(res.Stderr) > limit+1024 {
		t.Errorf("len(stdout)=%d len(stderr)=%d, want at most about %d", len(res.Stdout), len(res.Stderr), limit)
	}
	if !strings.HasPrefix(string(res.Stdout), "BEGIN\n") {
		t.Errorf("stdout lost its head: %q", res.Stdout[:min(20, len(res.Stdout))])
	}
	if !res.TimedOut && (res.ExitCode != 0 || !strings.HasSuffix(string(res.Stdout), "END\n")) {
		t.Errorf("the run finished but lost its tail: %s", dump(res))
	}
	assertServes(t, f)
}

// testKillParentAndAll kills its parent, then kill(-1, SIGKILL)s every
// process it may signal, while a sibling run is in progress: the sibling
// finishes normally, no process of the run outlives it, and the worker
// serves the next run.
func testKillParentAndAll(t *testing.T, f *fixture) {
	tok := token(t)
	type outcome struct {
		res sandbox.RunResult
		err error
	}
	sibling := make(chan outcome, 1)
	go func() {
		res, err := f.b.Run(t.Context(), sandbox.RunSpec{Env: f.env, Timeout: 60 * time.Second,
			Argv: []string{"python", "-c", "import time\nprint('sibling-started', flush=True)\ntime.sleep(8)\nprint('sibling-alive')\n"}})
		sibling <- outcome{res, err}
	}()
	time.Sleep(2 * time.Second) // let the sibling start; its own result shows if it had not
	start := time.Now()
	res := f.python(t, `
import os, signal, sys, time
print("ppid", os.getppid(), flush=True)
try:
    os.kill(os.getppid(), signal.SIGKILL)
    print("killed parent", flush=True)
except OSError as e:
    print("kill parent blocked", e.errno, flush=True)
time.sleep(0.5)
pid = os.fork()
if pid == 0:
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError as e:
        print("kill -1 failed", e.errno, flush=True)
    time.sleep(0.5)
    os._exit(0)
time.sleep(2)
print("survived kill -1", flush=True)
`, func(s *sandbox.RunSpec) {
		s.Argv = append(s.Argv, tok)
		s.Timeout = 30 * time.Second
	})
	t.Logf("kill parent, kill -1: exit %d after %s: %s", res.ExitCode, time.Since(start), strings.TrimSpace(string(res.Stdout)))
	if res.TimedOut {
		t.Errorf("the run hung until its timeout: %s", dump(res))
	}
	assertNoLeftovers(t, tok)
	sib := <-sibling
	if sib.err != nil {
		t.Fatalf("sibling run: %v", sib.err)
	}
	if sib.res.ExitCode != 0 || !strings.Contains(string(sib.res.Stdout), "sibling-alive") {
		t.Errorf("kill -1 in one sandbox reached another: %s", dump(sib.res))
	}
	assertServes(t, f)
}

// testHostSecrets looks for the host's secrets where hostile code would:
// credential files, the host's process table and environment, and the
// worker's temporary directory.
func testHostSecrets(t *testing.T, f *fixture) {
	secret := token(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "credentials"), "aws_secret_access_key="+secret, 0o644)
	_ = os.Chmod(dir, 0o755)
	res := f.python(t, fmt.Sprintf(`
import glob, os, sys
found = []
for pattern in [%q, "/root/*", "/root/.*/*", "/home/*/.*", "/etc/shadow", "/proc/*/environ", "/proc/*/cmdline",
                "/var/run/docker.sock", "/run/docker.sock", "/run/podman/podman.sock", "/run/autocoder/*"]:
    for p in glob.glob(pattern):
        try:
            with open(p, "rb") as fh:
                data = fh.read(1 << 20)
            found.append((p, data))
        except OSError:
            pass
# The secret arrives in two halves, so this run's own command line does not hold it.
needle = (sys.argv[1] + sys.argv[2]).encode()
leaks = [p for p, data in found if needle in data]
print("readable", len(found), "leaks", leaks)
socks = [p for p in ("/var/run/docker.sock", "/run/docker.sock", "/run/podman/podman.sock", "/run/autocoder/podman.sock") if os.path.exists(p)]
print("engine sockets", socks)
`, filepath.Join(dir, "*")), func(s *sandbox.RunSpec) { s.Argv = append(s.Argv, secret[:10], secret[10:]) })
	if res.ExitCode != 0 {
		t.Fatalf("run failed: %s", dump(res))
	}
	out := string(res.Stdout)
	if strings.Contains(out, secret) || !strings.Contains(out, "leaks []") {
		t.Errorf("the sandbox read a host secret:\n%s", out)
	}
	if !strings.Contains(out, "engine sockets []") {
		t.Errorf("the sandbox sees a container engine socket:\n%s", out)
	}
	assertServes(t, f)
}
