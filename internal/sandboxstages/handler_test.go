package sandboxstages_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/bwrap"
	"github.com/autocoder/autocoder/internal/sandboxstages"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/cache"
	"github.com/autocoder/autocoder/pkg/messages"
)

func TestMain(m *testing.M) {
	// nats.go's async publishes (an object store's put) leave this one
	// behind until their connection closes, as in internal/bus's tests.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect"))
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// fakeBackend answers Build and Run with canned values and records the
// specs it was given.
type fakeBackend struct {
	mu       sync.Mutex
	builds   []sandbox.EnvSpec
	runs     []sandbox.RunSpec
	buildErr error
	run      func(sandbox.RunSpec) (sandbox.RunResult, error)
}

var _ sandbox.Backend = (*fakeBackend)(nil)

func (b *fakeBackend) Name() string { return "fake" }
func (b *fakeBackend) Close() error { return nil }

func (b *fakeBackend) Build(_ context.Context, spec sandbox.EnvSpec) (sandbox.Env, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.builds = append(b.builds, spec)
	if b.buildErr != nil {
		return sandbox.Env{}, b.buildErr
	}
	return sandbox.Env{ID: "env-" + strings.Join(spec.Packages, "-"), Log: "built", Provenance: fakeProvenance}, nil
}

func (b *fakeBackend) Run(_ context.Context, spec sandbox.RunSpec) (sandbox.RunResult, error) {
	b.mu.Lock()
	b.runs = append(b.runs, spec)
	b.mu.Unlock()
	return b.run(spec)
}

const junitPass = `<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="2">` +
	`<testcase classname="test_solution" name="test_a" time="0.001"/>` +
	`<testcase classname="test_solution" name="test_b" time="0.001"><failure message="assert 1 == 2">E assert 1 == 2</failure></testcase>` +
	`</testsuite></testsuites>`

// fetcher maps samples to local files.
type fetcher struct {
	paths map[string]string // file name -> path
	err   error
	calls int
}

func (f *fetcher) FetchAll(_ context.Context, refs []messages.SampleRef) (map[string]string, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	out := map[string]string{}
	for _, r := range refs {
		out[r.FileName] = f.paths[r.FileName]
	}
	return out, nil
}

func command(t *testing.T, stage messages.Stage, input any) *messages.StageCommand {
	t.Helper()
	b, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	return &messages.StageCommand{V: messages.WireVersion, JobID: "j", Seq: 1, Stage: stage, Input: b}
}

func isPermanent(err error) bool { return bus.IsPermanent(err) }

// stages is the sandbox stages of handlers made with cfg, on a mux: the
// tests call them as the executor does.
type stages struct{ mux *stagework.Mux }

func newStages(t *testing.T, cfg sandboxstages.Config) stages {
	t.Helper()
	h, err := sandboxstages.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := stagework.NewMux(messages.DefaultStages())
	h.Register(mux)
	if err := mux.Err(); err != nil {
		t.Fatal(err)
	}
	return stages{mux}
}

// served is a stage's output as the result carries it.
type served struct{ raw json.RawMessage }

func (s stages) Handle(ctx context.Context, cmd *messages.StageCommand) (served, error) {
	out, _, err := s.mux.Serve(ctx, cmd)
	return served{out.Value}, err
}

// Version is the version of stage, as the cache key holds it.
func (s stages) Version(stage messages.Stage) string { return s.mux.Version(stage) }

// value decodes a served output.
func value[T any](t *testing.T, out served) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(out.raw, &v); err != nil {
		t.Fatalf("output %s: %v", out.raw, err)
	}
	return v
}

var salesRef = messages.SampleRef{Name: "sales", Object: "sha256:" + strings.Repeat("a", 64) + ".csv", FileName: "sales.csv"}

func TestVersionNamesTheBackend(t *testing.T) {
	t.Parallel()
	h := newStages(t, sandboxstages.Config{Backend: &fakeBackend{}, Samples: &fetcher{}})
	if v := h.Version(messages.StageBuild); v != "build/v1 backend@fake" {
		t.Errorf("Version = %q, want the stage's version and the backend's name", v)
	}
}

func TestBadCommandsArePermanent(t *testing.T) {
	t.Parallel()
	h := newStages(t, sandboxstages.Config{Backend: &fakeBackend{}, Samples: &fetcher{}})
	cmds := map[string]*messages.StageCommand{
		"llm stage":        {Stage: messages.StagePlan, Input: json.RawMessage(`{}`)},
		"unknown stage":    {Stage: "compile", Input: json.RawMessage(`{}`)},
		"profile input":    {Stage: messages.StageProfile, Input: json.RawMessage(`[]`)},
		"build input":      {Stage: messages.StageBuild, Input: json.RawMessage(`{"packages":"numpy"}`)},
		"run_tests input":  {Stage: messages.StageRunTests, Input: json.RawMessage(`{"timeout":"soon"}`)},
		"acceptance input": {Stage: messages.StageAcceptance, Input: json.RawMessage(`{`)},
		"run input":        {Stage: messages.StageRun, Input: json.RawMessage(`null1`)},
	}
	for name, cmd := range cmds {
		if _, err := h.Handle(ctxT(t), cmd); !isPermanent(err) {
			t.Errorf("%s: Handle = %v, want a permanent error", name, err)
		}
	}
}

// fakeProvenance is what every fake build fetched.
var fakeProvenance = []sandbox.Artifact{{URL: "http://idx:443/files/numpy-2.0-py3-none-any.whl", SHA256: strings.Repeat("ab", 32), Bytes: 3}}

func TestBuild(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		buildErr error
		want     messages.BuildOutput
		wantErr  bool
	}{
		{"built, with the interpreter's stdlib", nil, messages.BuildOutput{Image: "env-numpy", Log: "built", Stdlib: fakeStdlib,
			Provenance: []messages.Artifact{{URL: fakeProvenance[0].URL, SHA256: fakeProvenance[0].SHA256, Bytes: 3}}}, false},
		{"invalid packages are an output, not a failure",
			&sandbox.InvalidPackageError{Packages: []string{"nosuchpkg"}, Log: "pip: no matching distribution"},
			messages.BuildOutput{InvalidPackages: []string{"nosuchpkg"}, Log: "pip: no matching distribution"}, false},
		{"infrastructure failure is retried", errors.New("pip: connection reset"), messages.BuildOutput{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := &fakeBackend{buildErr: tc.buildErr, run: stdlibRun}
			h := newStages(t, sandboxstages.Config{Backend: b, Samples: &fetcher{}})
			out, err := h.Handle(ctxT(t), command(t, messages.StageBuild, messages.BuildInput{Packages: []string{"numpy"}, SystemPackages: []string{"libgomp1"}}))
			if tc.wantErr {
				if err == nil || isPermanent(err) {
					t.Errorf("Handle = %v, want a retryable error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, value[messages.BuildOutput](t, out)); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			want := []sandbox.EnvSpec{{Packages: []string{"numpy"}, SystemPackages: []string{"libgomp1"}}}
			if diff := cmp.Diff(want, b.builds); diff != "" {
				t.Errorf("build spec (-want +got):\n%s", diff)
			}
		})
	}
}

// fakeStdlib is what stdlibRun's interpreter says its stdlib is.
var fakeStdlib = func() []string {
	names := []string{"json", "os", "sys"}
	for i := 0; i < 60; i++ {
		names = append(names, "_mod"+string(rune('a'+i/26))+string(rune('a'+i%26)))
	}
	sort.Strings(names)
	return names
}()

// stdlibRun answers the stdlib probe as an interpreter would.
func stdlibRun(spec sandbox.RunSpec) (sandbox.RunResult, error) {
	if len(spec.Argv) < 4 || spec.Argv[0] != "python" || spec.Argv[2] != "-c" {
		return sandbox.RunResult{}, fmt.Errorf("unexpected run %q", spec.Argv)
	}
	return sandbox.RunResult{Stdout: []byte(strings.Join(fakeStdlib, "\n") + "\n")}, nil
}

func TestBuildLearnsStdlibOnce(t *testing.T) {
	t.Parallel()
	b := &fakeBackend{run: stdlibRun}
	h := newStages(t, sandboxstages.Config{Backend: b, Samples: &fetcher{}})
	for _, pkgs := range [][]string{{"numpy"}, {"pandas"}} {
		out, err := h.Handle(ctxT(t), command(t, messages.StageBuild, messages.BuildInput{Packages: pkgs}))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(fakeStdlib, value[messages.BuildOutput](t, out).Stdlib); diff != "" {
			t.Errorf("stdlib (-want +got):\n%s", diff)
		}
	}
	if len(b.runs) != 1 || b.runs[0].Env != "env-numpy" {
		t.Errorf("probe runs %+v: want one, in the first environment", b.runs)
	}

	// An interpreter that cannot answer: the build still succeeds, without a
	// list (the coordinator falls back), and the worker stops asking.
	bad := &fakeBackend{run: func(sandbox.RunSpec) (sandbox.RunResult, error) {
		return sandbox.RunResult{ExitCode: 1, Stderr: []byte("boom")}, nil
	}}
	hb := newStages(t, sandboxstages.Config{Backend: bad, Samples: &fetcher{}})
	for i := 0; i < 5; i++ {
		out, err := hb.Handle(ctxT(t), command(t, messages.StageBuild, messages.BuildInput{Packages: []string{"numpy"}}))
		if err != nil {
			t.Fatal(err)
		}
		if o := value[messages.BuildOutput](t, out); o.Image != "env-numpy" || o.Stdlib != nil {
			t.Errorf("build with a failing probe: %+v", o)
		}
	}
	if len(bad.runs) != 3 {
		t.Errorf("%d probe runs, want 3 then no more", len(bad.runs))
	}
}

func TestRunTests(t *testing.T) {
	t.Parallel()
	b := &fakeBackend{run: func(spec sandbox.RunSpec) (sandbox.RunResult, error) {
		return sandbox.RunResult{ExitCode: 1, Stdout: []byte("1 failed, 1 passed"), Files: map[string][]byte{sandbox.JUnitFile: []byte(junitPass)}}, nil
	}}
	f := &fetcher{paths: map[string]string{"sales.csv": "/host/sales"}}
	h := newStages(t, sandboxstages.Config{Backend: b, Samples: f})
	in := messages.RunTestsInput{Image: "env-numpy", Env: messages.BuildInput{Packages: []string{"numpy"}},
		Code: "def f(): pass\n", Tests: "def test_a(): pass\n", Samples: []messages.SampleRef{salesRef},
		Timeout: messages.Duration(45 * time.Second), Resources: messages.Resources{CPU: 2, Memory: "1Gi"}}
	out, err := h.Handle(ctxT(t), command(t, messages.StageRunTests, in))
	if err != nil {
		t.Fatal(err)
	}
	rep := value[messages.TestReport](t, out)
	if rep.Passed != 1 || rep.Failed != 1 || rep.ExitCode != 1 || len(rep.Cases) != 2 || rep.Cases[1].Message != "assert 1 == 2" {
		t.Errorf("report %+v", rep)
	}
	// The worker makes sure it has the environment (Build is idempotent)
	// and runs in its own build of it.
	if diff := cmp.Diff([]sandbox.EnvSpec{{Packages: []string{"numpy"}}}, b.builds); diff != "" {
		t.Errorf("builds (-want +got):\n%s", diff)
	}
	spec := b.runs[0]
	if spec.Env != "env-numpy" || string(spec.Files[sandbox.SolutionFile]) != in.Code || string(spec.Files[sandbox.TestFile]) != in.Tests {
		t.Errorf("run spec env %q files %v", spec.Env, spec.Files)
	}
	if spec.Timeout != 45*time.Second || spec.Memory != 1<<30 || spec.CPUs != 2 {
		t.Errorf("limits: timeout %s memory %d cpus %v", spec.Timeout, spec.Memory, spec.CPUs)
	}
	if diff := cmp.Diff(map[string]string{"sales.csv": "/host/sales"}, spec.Inputs); diff != "" {
		t.Errorf("inputs (-want +got):\n%s", diff)
	}
}

func TestAcceptance(t *testing.T) {
	t.Parallel()
	b := &fakeBackend{run: func(spec sandbox.RunSpec) (sandbox.RunResult, error) {
		return sandbox.RunResult{Outputs: map[string][]byte{"total": []byte("12.5\n"), "n": []byte("3")}}, nil
	}}
	h := newStages(t, sandboxstages.Config{Backend: b, Samples: &fetcher{paths: map[string]string{"sales.csv": "/host/sales"}}})
	for _, stage := range []messages.Stage{messages.StageAcceptance, messages.StageRun} {
		in := messages.AcceptanceInput{Image: "env-1", Env: messages.BuildInput{Packages: []string{"pandas"}}, Code: "print()\n", Samples: []messages.SampleRef{salesRef},
			Args: map[string]string{"threshold": "-1"}, Outputs: map[string]messages.Type{"total": messages.TypeFloat, "n": messages.TypeInt, "missing": messages.TypeStr}}
		out, err := h.Handle(ctxT(t), command(t, stage, in))
		if err != nil {
			t.Fatal(err)
		}
		got := value[messages.AcceptanceOutput](t, out)
		if got.OK || got.Outputs["total"] != 12.5 || got.Outputs["n"] != 3.0 || len(got.Problems) != 1 || !strings.Contains(got.Problems[0], "missing") {
			t.Errorf("%s: output %+v, want total and n parsed and missing reported", stage, got)
		}
	}
	if env := b.runs[0].Env; env != "env-pandas" {
		t.Errorf("ran in %q, want this worker's build of the package set", env)
	}
	argv := b.runs[0].Argv
	if diff := cmp.Diff([]string{"python", sandbox.SolutionFile, "--threshold=-1"}, argv); diff != "" {
		t.Errorf("argv (-want +got):\n%s", diff)
	}
}

// TestSandboxFailuresAreRetryable: a sample that cannot be fetched or a
// sandbox that cannot run is an error the runner retries, not a result.
func TestSandboxFailuresAreRetryable(t *testing.T) {
	t.Parallel()
	broken := &fakeBackend{run: func(sandbox.RunSpec) (sandbox.RunResult, error) {
		return sandbox.RunResult{}, errors.New("bwrap: cannot create namespace")
	}}
	h := newStages(t, sandboxstages.Config{Backend: broken, Samples: &fetcher{}})
	in := messages.RunTestsInput{Image: "env-1", Code: "x = 1\n", Tests: "def test_x(): pass\n"}
	for _, stage := range []messages.Stage{messages.StageRunTests, messages.StageAcceptance} {
		if _, err := h.Handle(ctxT(t), command(t, stage, in)); err == nil || isPermanent(err) {
			t.Errorf("%s with a broken sandbox: %v, want a retryable error", stage, err)
		}
	}
	noBuild := &fakeBackend{buildErr: errors.New("pip: connection reset"), run: func(sandbox.RunSpec) (sandbox.RunResult, error) {
		return sandbox.RunResult{}, nil
	}}
	if _, err := newStages(t, sandboxstages.Config{Backend: noBuild, Samples: &fetcher{}}).Handle(ctxT(t), command(t, messages.StageRunTests, in)); err == nil || isPermanent(err) {
		t.Errorf("run_tests when the environment cannot be rebuilt: %v, want a retryable error", err)
	}
	if len(noBuild.runs) != 0 {
		t.Error("ran without an environment")
	}
	ok := &fakeBackend{run: func(sandbox.RunSpec) (sandbox.RunResult, error) { return sandbox.RunResult{}, nil }}
	h = newStages(t, sandboxstages.Config{Backend: ok, Samples: &fetcher{err: errors.New("object store unreachable")}})
	in.Samples = []messages.SampleRef{salesRef}
	for _, stage := range []messages.Stage{messages.StageProfile, messages.StageRunTests, messages.StageAcceptance} {
		if _, err := h.Handle(ctxT(t), command(t, stage, messages.ProfileInput{Samples: in.Samples})); err == nil || isPermanent(err) {
			t.Errorf("%s with samples unreachable: %v, want a retryable error", stage, err)
		}
	}
	if len(ok.runs) != 0 {
		t.Error("ran the sandbox without its samples")
	}
}

// TestNoEnvironmentIsPermanent: a run command with neither an image nor a
// package set cannot be run anywhere.
func TestNoEnvironmentIsPermanent(t *testing.T) {
	t.Parallel()
	b := &fakeBackend{run: func(sandbox.RunSpec) (sandbox.RunResult, error) { return sandbox.RunResult{}, nil }}
	h := newStages(t, sandboxstages.Config{Backend: b, Samples: &fetcher{}})
	for _, stage := range []messages.Stage{messages.StageRunTests, messages.StageAcceptance, messages.StageRun} {
		if _, err := h.Handle(ctxT(t), command(t, stage, messages.RunTestsInput{Code: "x = 1\n", Tests: "def test_x(): pass\n"})); !isPermanent(err) {
			t.Errorf("%s without an environment: %v, want a permanent error", stage, err)
		}
	}
	if len(b.runs) != 0 {
		t.Error("ran without an environment")
	}
}

func TestProfile(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "orders.csv")
	if err := os.WriteFile(p, []byte("region,quantity,price\nnorth,3,2.5\nsouth,5,4.0\nnorth,1,10.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newStages(t, sandboxstages.Config{Backend: &fakeBackend{}, Samples: &fetcher{paths: map[string]string{"sales.csv": p}}})
	out, err := h.Handle(ctxT(t), command(t, messages.StageProfile, messages.ProfileInput{Samples: []messages.SampleRef{salesRef},
		MaxSampleRows: 2, Constraints: []string{"quantity must be positive"}}))
	if err != nil {
		t.Fatal(err)
	}
	po := value[messages.ProfileOutput](t, out)
	for _, want := range []string{"sales.csv", "quantity", "region"} {
		if !strings.Contains(po.DataContext, want) {
			t.Errorf("data context lacks %q:\n%s", want, po.DataContext)
		}
	}
	if len(po.GeneratedSchemas) == 0 {
		t.Error("no schemas generated")
	}
}

// TestProcessBackend runs the build, run_tests and acceptance stages on the
// real bubblewrap backend.
func TestProcessBackend(t *testing.T) {
	t.Parallel()
	b := newProcessBackend(t)
	h := newStages(t, sandboxstages.Config{Backend: b, Samples: &fetcher{}})
	out, err := h.Handle(ctxT(t), command(t, messages.StageBuild, messages.BuildInput{Packages: []string{}}))
	if err != nil {
		t.Fatal(err)
	}
	image := value[messages.BuildOutput](t, out).Image
	if image == "" {
		t.Fatalf("build output %s", out.raw)
	}
	// The sandbox's own interpreter reports its stdlib.
	if std := value[messages.BuildOutput](t, out).Stdlib; !slices.Contains(std, "json") || !slices.Contains(std, "os") || slices.Contains(std, "numpy") {
		t.Errorf("stdlib from the sandbox interpreter: %d names, %.10q", len(std), std)
	}
	code := "import os\n\n\ndef f():\n    return 42\n\n\nif __name__ == \"__main__\":\n    with open(\"/var/outputs/answer\", \"w\") as fh:\n        fh.write(str(f()))\n"
	out, err = h.Handle(ctxT(t), command(t, messages.StageRunTests, messages.RunTestsInput{Image: image, Code: code,
		Tests: "from solution import f\n\n\ndef test_f():\n    assert f() == 42\n"}))
	if err != nil {
		t.Fatal(err)
	}
	if rep := value[messages.TestReport](t, out); !rep.OK() || rep.Passed != 1 {
		t.Errorf("report %+v", rep)
	}
	out, err = h.Handle(ctxT(t), command(t, messages.StageAcceptance, messages.AcceptanceInput{Image: image, Code: code,
		Outputs: map[string]messages.Type{"answer": messages.TypeInt}}))
	if err != nil {
		t.Fatal(err)
	}
	if acc := value[messages.AcceptanceOutput](t, out); !acc.OK || acc.Outputs["answer"] != 42.0 {
		t.Errorf("acceptance %+v", acc)
	}

	// Another sandbox-worker (its own state dir) never built that
	// environment: it builds it from the package set and runs the tests.
	other := newStages(t, sandboxstages.Config{Backend: newProcessBackend(t), Samples: &fetcher{}})
	out, err = other.Handle(ctxT(t), command(t, messages.StageRunTests, messages.RunTestsInput{Image: image, Env: messages.BuildInput{Packages: []string{}},
		Code: code, Tests: "from solution import f\n\n\ndef test_f():\n    assert f() == 42\n"}))
	if err != nil {
		t.Fatalf("run on a worker without the environment: %v", err)
	}
	if rep := value[messages.TestReport](t, out); !rep.OK() {
		t.Errorf("report on the other worker %+v", rep)
	}
}

func newProcessBackend(t *testing.T) sandbox.Backend {
	t.Helper()
	const python = "/usr/bin/python3"
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatal("bwrap not found: run scripts/setup.sh")
	}
	// The warm runner on, as AUTOCODER_WARM_RUNNER defaults to.
	b, err := bwrap.New(bwrap.Config{Python: python, StateDir: t.TempDir(), WarmRunner: true})
	if err != nil {
		t.Fatalf("process backend: %v (run scripts/setup.sh)", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// recordingBackend is a real backend that records the run specs it is given.
type recordingBackend struct {
	sandbox.Backend
	mu   sync.Mutex
	runs []sandbox.RunSpec
}

func (b *recordingBackend) Run(ctx context.Context, spec sandbox.RunSpec) (sandbox.RunResult, error) {
	b.mu.Lock()
	b.runs = append(b.runs, spec)
	b.mu.Unlock()
	return b.Backend.Run(ctx, spec)
}

// TestCeilings: commands that ask for 100 h, 1 TiB and 64 CPUs run on the
// real bubblewrap backend at the worker's ceilings, which the sandboxed
// code sees as its own limits (RLIMIT_AS is the memory, RLIMIT_CPU the
// timeout times the CPUs, plus one).
func TestCeilings(t *testing.T) {
	t.Parallel()
	b := &recordingBackend{Backend: newProcessBackend(t)}
	ceil := sandboxstages.Ceilings{Timeout: 2 * time.Minute, Memory: 1 << 30, CPUs: 1}
	h := newStages(t, sandboxstages.Config{Backend: b, Samples: &fetcher{}, Ceilings: ceil})
	greedy := messages.Resources{CPU: 64, Memory: "1Ti"}
	const hours100 = messages.Duration(100 * time.Hour)
	const wantAS, wantCPU = 1 << 30, 2*60*1 + 1
	code := "import resource\n\n\ndef limits():\n" +
		"    return resource.getrlimit(resource.RLIMIT_AS)[0], resource.getrlimit(resource.RLIMIT_CPU)[0]\n\n\n" +
		"if __name__ == \"__main__\":\n    a, c = limits()\n" +
		"    open(\"/var/outputs/as\", \"w\").write(str(a))\n    open(\"/var/outputs/cpu\", \"w\").write(str(c))\n"
	tests := fmt.Sprintf("from solution import limits\n\n\ndef test_limits():\n    assert limits() == (%d, %d)\n", wantAS, wantCPU)

	out, err := h.Handle(ctxT(t), command(t, messages.StageBuild, messages.BuildInput{Packages: []string{}}))
	if err != nil {
		t.Fatal(err)
	}
	image := value[messages.BuildOutput](t, out).Image
	b.mu.Lock()
	b.runs = nil // the build's own run (the stdlib probe) is not a command's
	b.mu.Unlock()
	out, err = h.Handle(ctxT(t), command(t, messages.StageRunTests, messages.RunTestsInput{Image: image,
		Code: code, Tests: tests, Timeout: hours100, Resources: greedy}))
	if err != nil {
		t.Fatal(err)
	}
	if rep := value[messages.TestReport](t, out); !rep.OK() {
		t.Errorf("run_tests inside the sandbox: %+v", rep)
	}
	for _, stage := range []messages.Stage{messages.StageAcceptance, messages.StageRun} {
		out, err = h.Handle(ctxT(t), command(t, stage, messages.AcceptanceInput{Image: image, Code: code,
			Outputs: map[string]messages.Type{"as": messages.TypeInt, "cpu": messages.TypeInt}, Timeout: hours100, Resources: greedy}))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"as": float64(wantAS), "cpu": float64(wantCPU)}
		if diff := cmp.Diff(want, value[messages.AcceptanceOutput](t, out).Outputs); diff != "" {
			t.Errorf("%s: limits seen inside the sandbox (-want +got):\n%s", stage, diff)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.runs) != 3 {
		t.Fatalf("%d runs, want 3", len(b.runs))
	}
	for _, spec := range b.runs {
		if spec.Timeout != ceil.Timeout || spec.Memory != ceil.Memory || spec.CPUs != ceil.CPUs {
			t.Errorf("the backend got timeout %s, memory %d, %v CPUs; want the ceilings %s", spec.Timeout, spec.Memory, spec.CPUs, ceil)
		}
	}
}

// TestDefaultCeilings: without Config.Ceilings a run is capped at 30m, 8 GiB
// and the machine's cores; what stays under them, or is not asked for,
// is what the command asks for or the sandbox's default.
func TestDefaultCeilings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		timeout messages.Duration
		res     messages.Resources
		want    sandbox.RunSpec
	}{
		{"greedy", messages.Duration(100 * time.Hour), messages.Resources{CPU: 64 * float64(runtime.NumCPU()), Memory: "1Ti"},
			sandbox.RunSpec{Timeout: sandboxstages.DefaultMaxRunTimeout, Memory: sandboxstages.DefaultMaxMemory, CPUs: float64(runtime.NumCPU())}},
		{"modest", messages.Duration(45 * time.Second), messages.Resources{CPU: 1, Memory: "1Gi"},
			sandbox.RunSpec{Timeout: 45 * time.Second, Memory: 1 << 30, CPUs: 1}},
		{"unset", 0, messages.Resources{},
			sandbox.RunSpec{Timeout: sandbox.DefaultRunTimeout, Memory: sandbox.DefaultMemory, CPUs: sandbox.DefaultCPUs}},
		{"nonsense", -5, messages.Resources{CPU: -3, Memory: "lots"},
			sandbox.RunSpec{Timeout: sandbox.DefaultRunTimeout, Memory: sandbox.DefaultMemory, CPUs: sandbox.DefaultCPUs}},
		{"astronomical CPUs", 0, messages.Resources{CPU: math.MaxFloat64},
			sandbox.RunSpec{Timeout: sandbox.DefaultRunTimeout, Memory: sandbox.DefaultMemory, CPUs: float64(runtime.NumCPU())}},
	}
	for _, tc := range tests {
		b := &fakeBackend{run: func(sandbox.RunSpec) (sandbox.RunResult, error) { return sandbox.RunResult{}, nil }}
		h := newStages(t, sandboxstages.Config{Backend: b, Samples: &fetcher{}})
		_, err := h.Handle(ctxT(t), command(t, messages.StageAcceptance, messages.AcceptanceInput{Image: "env-1", Code: "print()\n",
			Timeout: tc.timeout, Resources: tc.res}))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := b.runs[0]
		if got.Timeout != tc.want.Timeout || got.Memory != tc.want.Memory || got.CPUs != tc.want.CPUs {
			t.Errorf("%s: the backend got timeout %s, memory %d, %v CPUs; want %s, %d, %v", tc.name,
				got.Timeout, got.Memory, got.CPUs, tc.want.Timeout, tc.want.Memory, tc.want.CPUs)
		}
	}
}

// TestFailedRunRemembered: a test run that fails on its code and tests is
// remembered in the negative cache (the fix stage reads it), unless the
// job said cache: disable, which leaves no trace in the cache.
func TestFailedRunRemembered(t *testing.T) {
	t.Parallel()
	b := &fakeBackend{run: func(spec sandbox.RunSpec) (sandbox.RunResult, error) {
		return sandbox.RunResult{ExitCode: 1, Stdout: []byte("1 failed, 1 passed"), Files: map[string][]byte{sandbox.JUnitFile: []byte(junitPass)}}, nil
	}}
	for _, mode := range []messages.CacheMode{messages.CacheAuto, messages.CacheDisable} {
		dir, err := cache.OpenDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = dir.Close() })
		failed := cache.FailedRuns{Cache: dir}
		h := newStages(t, sandboxstages.Config{Backend: b, Samples: &fetcher{}, FailedRuns: failed})
		in := messages.RunTestsInput{Image: "env-", Code: "def f(): pass\n", Tests: "def test_a(): pass\n", Timeout: messages.Duration(45 * time.Second)}
		cmd := command(t, messages.StageRunTests, in)
		cmd.Cache = mode
		if _, err := h.Handle(ctxT(t), cmd); err != nil {
			t.Fatal(err)
		}
		known, err := failed.Failed(ctxT(t), in.Code, in.Tests, cache.RunEnv{})
		if err != nil || known != (mode == messages.CacheAuto) {
			t.Errorf("cache %s: the failure is remembered: %v (%v)", mode, known, err)
		}
	}
}

// TestProbesWithinCeilings: the worker's own runs for a job (the build's
// standard-library probe, the code runner's import check) stay within its
// ceilings as the job's runs do: an operator's AUTOCODER_MAX_MEMORY of
// 512 MiB is not a 1 GiB probe.
func TestProbesWithinCeilings(t *testing.T) {
	t.Parallel()
	b := &fakeBackend{run: func(spec sandbox.RunSpec) (sandbox.RunResult, error) {
		return sandbox.RunResult{Stdout: []byte("[]")}, nil
	}}
	ceil := sandboxstages.Ceilings{Timeout: 20 * time.Second, Memory: 512 << 20, CPUs: 0.5}
	h := newStages(t, sandboxstages.Config{Backend: b, Samples: &fetcher{}, Ceilings: ceil})
	out, err := h.Handle(ctxT(t), command(t, messages.StageBuild, messages.BuildInput{Packages: []string{}}))
	if err != nil {
		t.Fatal(err)
	}
	image := value[messages.BuildOutput](t, out).Image
	if _, err := h.Handle(ctxT(t), command(t, messages.StageAcceptance, messages.AcceptanceInput{Image: image,
		Code: "import json\n", CheckImports: true})); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.runs) < 3 {
		t.Fatalf("%d runs, want the probe, the import check and the script", len(b.runs))
	}
	for _, spec := range b.runs {
		if spec.Timeout > ceil.Timeout || spec.Memory == 0 || spec.Memory > ceil.Memory || spec.CPUs == 0 || spec.CPUs > ceil.CPUs {
			t.Errorf("%v: timeout %s, memory %d, %v CPUs; want within the ceilings %s", spec.Argv, spec.Timeout, spec.Memory, spec.CPUs, ceil)
		}
	}
}
