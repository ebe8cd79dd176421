package sandboxtest

import (
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/sandbox"
)

// plantCode leaves what it can of itself behind: module globals (its own,
// pytest's, builtins), a sys.modules entry, sys.path, environment
// variables, and files in /tmp, $HOME, /dev/shm, /workspace,
// /var/outputs and site-packages (read-only: the write fails, and must).
// It first says whether pytest was imported before it ran: a warm child's
// interpreter has it, a fresh one does not.
const plantCode = `
import builtins, os, site, sys, types
tok = sys.argv[1]
print("warm" if "pytest" in sys.modules else "cold")
import pytest, json
pytest.PLANTED = tok
json.PLANTED = tok
builtins.PLANTED = tok
sys.modules["planted_" + tok] = types.ModuleType("planted_" + tok)
sys.path.append("/tmp/planted-" + tok)
os.environ["PLANTED_" + tok] = tok
for d in ("/tmp", os.path.expanduser("~"), "/dev/shm", "/workspace", "/var/outputs"):
    open(os.path.join(d, "planted-" + tok), "w").write(tok)
for d in site.getsitepackages():
    try:
        os.makedirs(d, exist_ok=True)
        open(os.path.join(d, "planted_%s.py" % tok), "w").write("X = 1")
        print("wrote", d)
    except OSError:
        pass
print("planted")
`

// findCode looks for everything plantCode leaves, and prints what it found.
const findCode = `
import builtins, os, site, sys
tok = sys.argv[1]
print("warm" if "pytest" in sys.modules else "cold")
import pytest, json
found = []
for mod in (pytest, json, builtins):
    if hasattr(mod, "PLANTED"):
        found.append(mod.__name__ + ".PLANTED")
found += [m for m in sys.modules if tok in m]
found += [p for p in sys.path if tok in p]
found += [k for k in os.environ if tok in k]
for d in ["/tmp", os.path.expanduser("~"), "/dev/shm", "/workspace", "/var/outputs"] + site.getsitepackages() + [site.getusersitepackages()]:
    try:
        found += [os.path.join(d, n) for n in os.listdir(d) if tok in n]
    except OSError:
        pass
try:
    __import__("planted_" + tok)
    found.append("import planted_" + tok)
except ImportError:
    pass
print("found", found)
`

// plantTests and findTests do the same through pytest, in the solution
// and test modules of RunTests.
const (
	plantTests = `
import os, sys, pytest, solution
def test_plant():
    solution.PLANTED = 1
    pytest.PLANTED = 1
    os.environ["PLANTED_TESTS"] = "1"
    sys.modules["planted_tests"] = solution
`
	findTests = `
import os, sys, pytest, solution
def test_find():
    assert not hasattr(solution, "PLANTED")
    assert not hasattr(pytest, "PLANTED")
    assert "PLANTED_TESTS" not in os.environ
    assert "planted_tests" not in sys.modules
`
)

// WarmIsolation checks that consecutive runs of a backend with its warm
// runner on are warm (pytest already imported) and share nothing: one run
// writes module globals, files in /tmp, $HOME, the workspace, the outputs
// and site-packages, environment variables and sys.modules entries, and
// the next run sees none of them; the same through RunTests.
func WarmIsolation(t *testing.T, b sandbox.Backend) {
	t.Helper()
	env, err := b.Build(t.Context(), sandbox.EnvSpec{})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	tok := token(t)
	run := func(code string) string {
		t.Helper()
		res, err := b.Run(t.Context(), sandbox.RunSpec{Env: env.ID, Argv: []string{"python", "-c", code, tok},
			Timeout: 60 * time.Second})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("Run: %v\n%s", err, dump(res))
		}
		return string(res.Stdout)
	}
	for i := range 2 {
		out := run(plantCode)
		if !strings.HasPrefix(out, "warm\n") || !strings.Contains(out, "planted") {
			t.Errorf("planting run %d: %q, want a warm run that planted", i, out)
		}
		if strings.Contains(out, "wrote") {
			t.Errorf("planting run %d wrote into site-packages: %q", i, out)
		}
		if out := run(findCode); out != "warm\nfound []\n" {
			t.Errorf("run after planting run %d: %q, want a warm run that found nothing", i, out)
		}
	}
	// A script under -I (code mode's prelude runs so) is warm too, and
	// its directory is not put on sys.path, as -I says.
	res, err := b.Run(t.Context(), sandbox.RunSpec{Env: env.ID, Argv: []string{"python", "-I", "probe.py"},
		Files:   map[string][]byte{"probe.py": []byte(`import sys; print("warm" if "pytest" in sys.modules else "cold", sys.path[0])`)},
		Timeout: 60 * time.Second})
	if out := string(res.Stdout); err != nil || !strings.HasPrefix(out, "warm ") || strings.Contains(out, "/workspace") {
		t.Errorf("python -I probe.py: %v %q, want a warm run without /workspace on sys.path", err, out)
	}
	warmDistributions(t, b, env.ID)
	warmUnclosedFiles(t, b, env.ID)
	warmFileNames(t, b, env.ID)
	f := &fixture{b: b, env: env.ID}
	warmPytestConfig(t, f)
	if rep := f.runTests(t, sandbox.TestRun{Code: "X = 0\n", Tests: plantTests}); !rep.OK() {
		t.Errorf("planting tests: %+v", rep)
	}
	if rep := f.runTests(t, sandbox.TestRun{Code: "X = 0\n", Tests: findTests}); !rep.OK() {
		t.Errorf("tests after the planting tests saw what they left: %s", rep.Output)
	}
}

// distCode compares importlib.metadata.distributions(), which a warm
// runner answers from its one scan of the environment (warm_preload),
// with a fresh scan of the run's sys.path.
const distCode = `import importlib.metadata as m
names = lambda ds: sorted(str(d.metadata["Name"]) for d in ds)
warm, fresh = names(m.distributions()), names(m.Distribution.discover())
print("same", warm == fresh, "planted", "planted" in warm, len(warm) > 1)
`

// warmDistributions: a warm run sees the environment's distributions as a
// fresh interpreter would, one its workspace adds included, and the next
// run does not see that one.
func warmDistributions(t *testing.T, b sandbox.Backend, env string) {
	t.Helper()
	meta := []byte("Metadata-Version: 2.1\nName: planted\nVersion: 1.0\n")
	for _, tc := range []struct {
		files map[string][]byte
		want  string
	}{
		{map[string][]byte{"planted-1.0.dist-info/METADATA": meta}, "same True planted True True\n"},
		{nil, "same True planted False True\n"},
	} {
		res, err := b.Run(t.Context(), sandbox.RunSpec{Env: env, Argv: []string{"python", "-c", distCode}, Files: tc.files,
			Timeout: 60 * time.Second})
		if out := string(res.Stdout); err != nil || out != tc.want {
			t.Errorf("distributions with files %v: %v %q, want %q\n%s", tc.files, err, out, tc.want, dump(res))
		}
	}
}

// The pytest config a warm runner makes before its forks (warmrun.py,
// _prebuild_pytest_config): a test run of the harness takes it, as the
// run's own (its arguments, its directory), and leaves nothing in it for
// the next; a run with other plugin arguments gets a fresh one.
const (
	plantConfigTests = `
import os, pathlib, types
def test_plant(pytestconfig):
    assert getattr(pytestconfig, "_warm_prebuilt", False), "the prebuilt config was not taken"
    assert pytestconfig.invocation_params.dir == pathlib.Path(os.getcwd())
    assert "test_solution.py" in pytestconfig.invocation_params.args
    assert pytestconfig.pluginmanager.is_blocked("cacheprovider")
    pytestconfig.PLANTED = 1
    pytestconfig.pluginmanager.register(types.ModuleType("planted_plugin"), "planted_plugin")
`
	findConfigTests = `
def test_find(pytestconfig):
    assert getattr(pytestconfig, "_warm_prebuilt", False), "the prebuilt config was not taken"
    assert not hasattr(pytestconfig, "PLANTED")
    assert pytestconfig.pluginmanager.get_plugin("planted_plugin") is None
`
	otherPluginArgsTest = `
def test_other(pytestconfig):
    assert not getattr(pytestconfig, "_warm_prebuilt", False), "a run with other -p arguments took the prebuilt config"
    assert pytestconfig.pluginmanager.is_blocked("doctest")
    assert pytestconfig.pluginmanager.is_blocked("cacheprovider")
`
)

func warmPytestConfig(t *testing.T, f *fixture) {
	t.Helper()
	if rep := f.runTests(t, sandbox.TestRun{Code: "X = 0\n", Tests: plantConfigTests}); !rep.OK() {
		t.Errorf("a warm test run's pytest config: %s", rep.Output)
	}
	if rep := f.runTests(t, sandbox.TestRun{Code: "X = 0\n", Tests: findConfigTests}); !rep.OK() {
		t.Errorf("the next run's pytest config saw what the last one left: %s", rep.Output)
	}
	res, err := f.b.Run(t.Context(), sandbox.RunSpec{Env: f.env, Files: map[string][]byte{"test_other.py": []byte(otherPluginArgsTest)},
		Argv:    []string{"python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:doctest", "test_other.py"},
		Timeout: 60 * time.Second})
	if err != nil || res.ExitCode != 0 {
		t.Errorf("pytest with other plugin arguments: %v\n%s", err, dump(res))
	}
}

// unclosedCode writes its output as scripts models write often do: to a
// file opened at module level and never closed, held by the module's
// globals (which its function keeps in a cycle, as every script's
// functions do), then ends as its argument says.
const unclosedCode = `import sys
out = open("/var/outputs/unclosed.txt", "w")
out.write("declared output")
def keep():
    return out
if sys.argv[1] == "exit":
    sys.exit(0)
if sys.argv[1] == "raise":
    raise RuntimeError("after the write")
`

// warmUnclosedFiles: a warm run ends as a fresh interpreter does, which
// clears its module globals after the atexit handlers, so a file the
// program left open is flushed: its output is whole, whether the program
// is a script, a -c program, or one that ends by sys.exit or an uncaught
// exception. A warm child that only called os._exit dropped the buffer,
// and a run that passes cold failed warm.
func warmUnclosedFiles(t *testing.T, b sandbox.Backend, env string) {
	t.Helper()
	for _, tc := range []struct {
		name string
		argv []string
		exit int
	}{
		{"script", []string{"python", "out.py", "end"}, 0},
		{"script, sys.exit", []string{"python", "out.py", "exit"}, 0},
		{"script, an uncaught exception", []string{"python", "out.py", "raise"}, 1},
		{"-c", []string{"python", "-c", unclosedCode, "end"}, 0},
	} {
		res, err := b.Run(t.Context(), sandbox.RunSpec{Env: env, Argv: tc.argv, CollectOutputs: true,
			Files: map[string][]byte{"out.py": []byte(unclosedCode)}, Timeout: 60 * time.Second})
		if err != nil || res.ExitCode != tc.exit {
			t.Errorf("%s: %v, exit %d (want %d)\n%s", tc.name, err, res.ExitCode, tc.exit, dump(res))
			continue
		}
		if got := string(res.Outputs["unclosed.txt"]); got != "declared output" {
			t.Errorf("%s: the unclosed file holds %q, want %q, as a fresh interpreter leaves it", tc.name, got, "declared output")
		}
	}
}

// warmFileNames: a run's files under names that are local but not clean
// ("data/./in.txt") reach the workspace as a cold run's do, warm (the
// backends' tests count a fallback to a cold run as a failure).
func warmFileNames(t *testing.T, b sandbox.Backend, env string) {
	t.Helper()
	res, err := b.Run(t.Context(), sandbox.RunSpec{Env: env, Timeout: 60 * time.Second,
		Argv:  []string{"python", "-c", `print(open("data/in.txt").read(), open("data/deep/x.txt").read())`},
		Files: map[string][]byte{"data/./in.txt": []byte("in"), "data/deep/../deep/x.txt": []byte("x")}})
	if err != nil || res.ExitCode != 0 || string(res.Stdout) != "in x\n" {
		t.Errorf("files under unclean names: %v\n%s", err, dump(res))
	}
}
