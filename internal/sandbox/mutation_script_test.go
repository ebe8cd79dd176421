package sandbox

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/pkg/messages"
)

// These tests run mutate.py as RunMutation does (MutationRunSpec's files
// and argv, ParseMutationReport on what it leaves), with the host's
// /usr/bin/python3 and its pytest, without a sandbox: what they check is
// the mutation tester's, not a backend's (sandboxtest.RunMutation checks
// the backends).

const hostPython = "/usr/bin/python3"

func needPytest(t *testing.T) {
	t.Helper()
	if err := exec.Command(hostPython, "-c", "import pytest").Run(); err != nil {
		t.Skipf("%s with pytest is needed: %v", hostPython, err)
	}
}

// runScript runs mr as RunMutation would, in a fresh directory, waits
// settle after it exits (as a backend takes a moment to collect), and
// parses the report.
func runScript(t *testing.T, mr MutationRun, settle time.Duration) messages.TestStrength {
	t.Helper()
	needPytest(t)
	spec, err := MutationRunSpec(mr)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range spec.Files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(t.Context(), hostPython, spec.Argv[1:]...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	res := RunResult{}
	start := time.Now()
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		res.ExitCode = ee.ExitCode()
	}
	res.Duration = time.Since(start)
	time.Sleep(settle)
	res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
	res.Files = map[string][]byte{}
	for _, name := range spec.Collect {
		if data, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			res.Files[name] = data
		}
	}
	return ParseMutationReport(res, spec.Collect[0], mr.Seed)
}

// The report cannot be forged by the tests: they do not know its name
// (not in argv, the environment or the workspace), and a process they
// leave behind to write it once the tester is done is killed first.
func TestMutationScriptReportUnforgeable(t *testing.T) {
	t.Parallel()
	code := "def grade(s):\n    if s >= 90:\n        return 'A'\n    return 'B'\n"
	tests := `import glob, json, os, sys, time
from solution import grade

FORGED = {"version": 1, "seed": 1, "points": 9, "mutants": 9, "killed": 9, "survived": 0, "equivalent": 0}


def forge(path):
    try:
        if os.path.exists(path):
            os.chmod(path, 0o644)
        with open(path, "w") as f:
            json.dump(FORGED, f)
        os.chmod(path, 0o444)
    except OSError:
        pass


def test_grade():
    assert grade(95) == "A"
    for i, a in enumerate(sys.argv):
        if a == "--out":
            forge(sys.argv[i + 1])
    forge(".harness/mutation.json")
    if os.fork() == 0:  # a daemon that outlives the test run
        os.setsid()
        if os.fork() == 0:
            root = os.getcwd()
            for _ in range(3000):
                for p in glob.glob(os.path.join(root, ".harness", "mutation*.json")):
                    forge(p)
                time.sleep(0.002)
        os._exit(0)
`
	ts := runScript(t, MutationRun{Code: code, Tests: tests, Seed: 1}, time.Second)
	if ts.Killed == 9 || ts.Error != "" || ts.Mutants == 0 || ts.Survived == 0 {
		t.Errorf("want the real measurement (grade(50) is never checked), got %+v", ts)
	}
}

// A report mutate.py did not finish writing (it exited non-zero) or whose
// counts do not add up is an error, not a score; a measurement that
// judged no mutant has no score.
func TestParseMutationReportRefuses(t *testing.T) {
	t.Parallel()
	const path = ".harness/mutation-00.json"
	for _, tc := range []struct {
		name, report string
		exit         int
		want         string
	}{
		{"exit 1 with a report", `{"points":9,"mutants":9,"killed":9}`, 1, "exited with code 1"},
		{"negative count", `{"points":4,"mutants":4,"killed":9,"survived":-5}`, 0, "survived is -5"},
		{"counts do not add up", `{"points":9,"mutants":9,"killed":9,"survived":3}`, 0, "does not add up"},
		{"more mutants than points", `{"points":1,"mutants":2,"killed":2}`, 0, "2 mutants of 1 points"},
		{"nothing judged", `{"points":5,"mutants":5,"not_run":5,"partial":true}`, 0, messages.NotJudged + ": the time budget ran out"},
		{"nothing to mutate", `{"points":0,"mutants":0}`, 0, messages.NotJudged + ": solution.py has nothing to mutate"},
		{"all equivalent", `{"points":2,"mutants":2,"equivalent":2}`, 0, messages.NotJudged + ": all 2 mutants are equivalent"},
	} {
		ts := ParseMutationReport(RunResult{ExitCode: tc.exit, Files: map[string][]byte{path: []byte(tc.report)}}, path, 1)
		if !strings.Contains(ts.Error, tc.want) || ts.Score != 0 || ts.Scored() {
			t.Errorf("%s: %+v, want an error with %q and no score", tc.name, ts, tc.want)
		}
	}
	ts := ParseMutationReport(RunResult{Files: map[string][]byte{path: []byte(`{"points":9,"mutants":4,"killed":3,"survived":1}`)}}, path, 1)
	if ts.Error != "" || ts.Score != 0.75 || !ts.Scored() {
		t.Errorf("a good report: %+v", ts)
	}
	if ts := ParseMutationReport(RunResult{Files: map[string][]byte{".harness/mutation.json": []byte(`{"killed":1,"mutants":1,"points":1}`)}}, path, 1); ts.Error == "" {
		t.Errorf("a report at another name is read: %+v", ts)
	}
}

// Each run starts from the workspace as it was: a test that makes a
// directory does not kill every mutant; tests that pass only once are an
// error, not a score.
func TestMutationScriptFreshWorkspace(t *testing.T) {
	t.Parallel()
	code := "def grade(s):\n    if s >= 90:\n        return 'A'\n    return 'B'\n"
	mkdir := "import os, tempfile\nfrom solution import grade\n\n\ndef test_grade():\n    os.mkdir('out')\n" +
		"    open(os.path.join(tempfile.gettempdir(), 'mine'), 'x').close()\n    assert grade(95) == 'A'\n"
	ts := runScript(t, MutationRun{Code: code, Tests: mkdir, Seed: 1}, 0)
	if ts.Error != "" || ts.Survived == 0 || ts.Score == 1 {
		t.Errorf("a test that makes a directory kills every mutant: %+v", ts)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	once := "import os\nfrom solution import grade\n\n\ndef test_grade():\n    assert grade(95) == 'A'\n" +
		"    open(" + pyString(marker) + ", 'x').close()\n"
	ts = runScript(t, MutationRun{Code: code, Tests: once, Seed: 1}, 0)
	if !strings.Contains(ts.Error, "not when run again") || ts.Scored() {
		t.Errorf("tests that pass only once: %+v", ts)
	}
}

func pyString(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// A boundary the tests do not come near stays a survivor: that the
// comparison's line ran on a perturbed call is no evidence that the mutant
// is equivalent, only a call on which the comparison came out otherwise.
// x >= 0 -> x > 0 in an absolute value still is equivalent.
func TestMutationScriptFarBoundarySurvives(t *testing.T) {
	t.Parallel()
	code := "def grade(s):\n    if s >= 90:\n        return 'A'\n    return 'B'\n\n\n" +
		"def absolute(x):\n    if x >= 0:\n        return x\n    return -x\n"
	tests := "from solution import grade, absolute\n\n\ndef test_grade():\n    assert grade(95) == 'A'\n    assert grade(50) == 'B'\n\n\n" +
		"def test_absolute():\n    assert absolute(3) == 3\n    assert absolute(-2) == 2\n    assert absolute(0) == 0\n"
	ts := runScript(t, MutationRun{Code: code, Tests: tests, Seed: 1, MaxSurvivors: MaxMaxSurvivors}, 0)
	got := map[string]bool{}
	for _, s := range ts.Survivors {
		got[s.Description] = true
	}
	if !got[">= -> >"] || !got["90 -> 91"] || ts.Score == 1 {
		t.Errorf("the boundary at 90, never reached, is not a survivor: %+v", ts)
	}
	if ts.ByOperator["boundary"].Equivalent != 1 {
		t.Errorf("want x >= 0 -> x > 0 equivalent: %+v", ts.ByOperator)
	}
}

// A result of a class solution.py defines (a dataclass, an enum, a
// namedtuple) is the same in the original and the mutant when its value
// is: the two modules' classes are not one object, but they are one class.
func TestMutationScriptOwnClassesCompareByValue(t *testing.T) {
	t.Parallel()
	code := `import enum
from dataclasses import dataclass
from typing import NamedTuple


@dataclass
class Box:
    value: int


class Kind(enum.Enum):
    SMALL = 1
    BIG = 2


class Pair(NamedTuple):
    a: int
    b: int


def box(x):
    if x >= 0:
        return Box(x)
    return Box(-x)


def kind(x):
    if x >= 0:
        return (Kind.SMALL, x)
    return (Kind.SMALL, -x)


def pair(x):
    if x >= 0:
        return Pair(x, 1)
    return Pair(-x, 1)
`
	tests := "from solution import box, kind, pair, Box, Kind, Pair\n\n\ndef test_all():\n" +
		"    for x in (3, -2, 0):\n        assert box(x) == Box(abs(x))\n        assert kind(x) == (Kind.SMALL, abs(x))\n        assert pair(x) == Pair(abs(x), 1)\n"
	ts := runScript(t, MutationRun{Code: code, Tests: tests, Seed: 1, MaxSurvivors: MaxMaxSurvivors}, 0)
	for _, s := range ts.Survivors {
		if s.Description == ">= -> >" {
			t.Errorf("an equivalent mutant is a survivor (witness %q: %s vs %s)", s.Witness, s.Original, s.Mutant)
		}
	}
	if ts.ByOperator["boundary"].Equivalent != 3 {
		t.Errorf("want the three x >= 0 -> x > 0 equivalent: %+v", ts)
	}
}

// The comparison of results, inside mutate.py: generators and values that
// compare by identity are undecided, not different.
func TestMutationScriptEqual(t *testing.T) {
	t.Parallel()
	needPytest(t)
	script := `import sys, types
sys.path.insert(0, sys.argv[1])
import mutate
a = mutate.load("solution", "from dataclasses import dataclass\n@dataclass\nclass P:\n    x: int\nclass Q:\n    pass\n")
b = mutate.load("solution_mutant", "from dataclasses import dataclass\n@dataclass\nclass P:\n    x: int\nclass Q:\n    pass\n")
checks = [
    (mutate.equal(a.P(1), b.P(1)), True),
    (mutate.equal(a.P(1), b.P(2)), False),
    (mutate.equal([a.P(1)], [b.P(1)]), True),
    (mutate.equal((i for i in range(2)), (i for i in range(2))), None),
    (mutate.equal(object(), object()), None),
    (mutate.equal(a.Q(), b.Q()), True),
    (mutate.equal(1, 1.0), False),
    (mutate.same(("value", (i for i in "x"), (), {}, ""), ("value", (i for i in "x"), (), {}, "")), None),
]
bad = [i for i, (got, want) in enumerate(checks) if got is not want]
print(bad)
sys.exit(1 if bad else 0)
`
	out, err := exec.Command(hostPython, "-c", script, ".").CombinedOutput()
	if err != nil {
		t.Errorf("equal: the checks at %s fail (%v)", out, err)
	}
}

// Constants in types (Literal[...], a type alias) are not mutated, as
// annotations are not.
func TestMutationScriptTypesNotMutated(t *testing.T) {
	t.Parallel()
	needPytest(t)
	dir := t.TempDir()
	code := "from typing import Literal, Optional, TypeAlias\n\nMode = Literal[1, 2]\nAlias: TypeAlias = Literal[3]\n\n\n" +
		"def f(x: Literal[4]) -> Literal[5]:\n    y: Literal[6] = 7\n    return x + y\n"
	if err := os.WriteFile(filepath.Join(dir, "solution.py"), []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(hostPython, mustAbs(t, "mutate.py"), "--list", "--out", "list.json")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "list.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"1 ->", "2 ->", "3 ->", "4 ->", "5 ->", "6 ->"} {
		if bytes.Contains(data, []byte(`"description": "`+n)) {
			t.Errorf("a constant of a type is mutated (%s): %s", n, data)
		}
	}
	if !bytes.Contains(data, []byte(`"description": "7 -> 8"`)) {
		t.Errorf("the value 7 is not mutated: %s", data)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
