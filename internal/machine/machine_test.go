package machine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/pkg/messages"
)

var update = flag.Bool("update", false, "rewrite golden files")

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// world answers dispatched stages; a test overrides per stage and per call.
type world struct {
	t       *testing.T
	answers map[messages.Stage][]any // consumed in order; the last repeats
	errs    map[messages.Stage]messages.ErrorKind
	calls   map[messages.Stage]int
	// fn answers a stage from its command when set (n counts its calls);
	// returning nil falls back to answers.
	fn map[messages.Stage]func(c *messages.StageCommand, n int) any
}

func newWorld(t *testing.T) *world {
	return &world{t: t, answers: map[messages.Stage][]any{
		messages.StagePlan:       {messages.Plan{Description: "sum", Approach: "loop"}},
		messages.StageCode:       {messages.Solution{Language: "python", Code: "def f():\n    return 1\n"}},
		messages.StageTests:      {messages.Tests{Code: "from solution import f\n\ndef test_f():\n    assert f() == 1\n"}},
		messages.StageBuild:      {messages.BuildOutput{Image: "env-1"}},
		messages.StageRunTests:   {pass(3)},
		messages.StageProfile:    {messages.ProfileOutput{DataContext: "ctx", GeneratedSchemas: map[string]string{"sales": "schema"}}},
		messages.StageAcceptance: {messages.AcceptanceOutput{OK: true, Outputs: map[string]any{"row_count": 3}}},
		messages.StageMutate:     {messages.TestStrength{Points: 3, Mutants: 3, Killed: 3, Score: 1}},
	}, errs: map[messages.Stage]messages.ErrorKind{}, calls: map[messages.Stage]int{},
		fn: map[messages.Stage]func(*messages.StageCommand, int) any{}}
}

func pass(n int) messages.TestReport { return messages.TestReport{Passed: n} }

func fail(names ...string) messages.TestReport {
	r := messages.TestReport{Passed: 1, Failed: len(names), ExitCode: 1}
	for _, n := range names {
		r.Cases = append(r.Cases, messages.TestCase{Name: n, Outcome: messages.OutcomeFailed, Message: "assert 1 == 2"})
	}
	return r
}

func (w *world) answer(c *messages.StageCommand) *messages.StageResult {
	n := w.calls[c.Stage]
	w.calls[c.Stage]++
	r := &messages.StageResult{V: 1, JobID: c.JobID, Seq: c.Seq, Stage: c.Stage, StartedAt: t0, DurationMS: 5,
		Usage: messages.Usage{InputTokens: 10, OutputTokens: 5, Calls: 1}}
	if k, ok := w.errs[c.Stage]; ok {
		r.Error, r.ErrorKind = "boom", k
		return r
	}
	var a any
	if f := w.fn[c.Stage]; f != nil {
		a = f(c, n)
	}
	if k, ok := a.(messages.ErrorKind); ok {
		r.Error, r.ErrorKind = "boom", k
		return r
	}
	if a == nil {
		as := w.answers[c.Stage]
		if len(as) == 0 {
			w.t.Fatalf("no answer scripted for stage %s", c.Stage)
		}
		a = as[len(as)-1]
		if n < len(as) {
			a = as[n]
		}
	}
	b, err := json.Marshal(a)
	if err != nil {
		w.t.Fatal(err)
	}
	r.Output = b
	return r
}

// run drives a job to completion, answering every dispatch in FIFO order, and
// returns the final state, every event applied and every command produced.
func run(t *testing.T, w *world, spec messages.JobSpec, samples []messages.SampleRef) (State, []Input, []Command) {
	t.Helper()
	spec.Normalize("")
	ev := Input{Kind: InputSubmitted, Time: t0, Submit: &Submission{JobID: "job1", Spec: spec, Samples: samples}}
	var s State
	var events []Input
	var all []Command
	queue := []Input{ev}
	for i := 0; len(queue) > 0; i++ {
		if i > 500 {
			t.Fatal("job did not finish in 500 steps")
		}
		ev, queue = queue[0], queue[1:]
		before, _ := json.Marshal(s)
		next, cmds := Step(s, ev)
		after, _ := json.Marshal(s)
		if !bytes.Equal(before, after) {
			t.Fatal("Step modified the state it was given")
		}
		s = next
		events = append(events, ev)
		all = append(all, cmds...)
		for _, c := range cmds {
			if c.Dispatch != nil {
				queue = append(queue, Input{Kind: InputStageResult, Time: ev.Time.Add(time.Second), Result: w.answer(c.Dispatch)})
			}
		}
	}
	if !s.Done() {
		t.Fatalf("job not done: phase %s, pending %v", s.Phase, s.Pending)
	}
	return s, events, all
}

func stagesOf(cmds []Command) []string {
	var out []string
	for _, c := range cmds {
		if c.Dispatch != nil {
			out = append(out, string(c.Dispatch.Stage))
		}
	}
	return out
}

// baseSpec is a job without test strength (strength_test.go has its own):
// the other tests follow paths it would lengthen.
func baseSpec() messages.JobSpec {
	return messages.JobSpec{Prompt: "return one", Options: messages.Options{Mutation: messages.MutationOff}}
}

func TestPaths(t *testing.T) {
	t.Parallel()
	sales := []messages.SampleRef{{Name: "sales", Object: "sha256:" + strings.Repeat("a", 64) + ".csv", FileName: "sales.csv"}}
	tests := []struct {
		name       string
		spec       func(*messages.JobSpec)
		samples    []messages.SampleRef
		script     func(*world)
		wantStages []string
		wantStatus messages.JobStatus
		wantError  string
		check      func(*testing.T, State)
	}{
		{
			name:       "first pass success without samples",
			wantStages: []string{"plan", "code", "tests", "build", "run_tests"},
			wantStatus: messages.StatusSucceeded,
		},
		{
			name:       "samples are profiled and the script accepted on them",
			spec:       func(s *messages.JobSpec) { s.Outputs = map[string]messages.Type{"row_count": messages.TypeInt} },
			samples:    sales,
			wantStages: []string{"profile", "plan", "code", "tests", "build", "run_tests", "acceptance"},
			wantStatus: messages.StatusSucceeded,
			check: func(t *testing.T, s State) {
				r := ResultOf(s)
				if r.DataContext != "ctx" || r.GeneratedSchemas["sales"] != "schema" || r.Outputs["row_count"] != float64(3) {
					t.Errorf("result lacks profile or outputs: %+v", r)
				}
				if s.Task.Samples["sales"] != "sales.csv" {
					t.Errorf("task samples = %v", s.Task.Samples)
				}
			},
		},
		{
			name: "a logic bug is fixed in iteration 2",
			script: func(w *world) {
				w.answers[messages.StageRunTests] = []any{fail("test_f"), pass(3)}
				w.answers[messages.StageDiagnose] = []any{messages.Diagnosis{Failures: []messages.Failure{{TestName: "test_f", ErrorType: messages.ErrorLogic}}}}
				w.answers[messages.StageFix] = []any{messages.Solution{Language: "python", Code: "def f():\n    return 2\n"}}
			},
			wantStages: []string{"plan", "code", "tests", "build", "run_tests", "diagnose", "fix", "run_tests"},
			wantStatus: messages.StatusSucceeded,
			check: func(t *testing.T, s State) {
				if s.Iteration != 2 || !strings.Contains(s.Solution.Code, "return 2") {
					t.Errorf("iteration %d, code %q", s.Iteration, s.Solution.Code)
				}
			},
		},
		{
			name: "a wrong test is patched",
			script: func(w *world) {
				w.answers[messages.StageRunTests] = []any{fail("test_f"), pass(3)}
				w.answers[messages.StageDiagnose] = []any{messages.Diagnosis{Failures: []messages.Failure{{TestName: "test_f", ErrorType: messages.ErrorTestError}}}}
				w.answers[messages.StagePatchTests] = []any{messages.PatchTestsOutput{Tests: "patched"}}
			},
			wantStages: []string{"plan", "code", "tests", "build", "run_tests", "diagnose", "patch_tests", "run_tests"},
			wantStatus: messages.StatusSucceeded,
			check: func(t *testing.T, s State) {
				if s.Tests.Code != "patched" || strings.Contains(s.Solution.Code, "2") {
					t.Errorf("tests %q code %q", s.Tests.Code, s.Solution.Code)
				}
			},
		},
		{
			name: "a missing package rebuilds the image and keeps code and tests",
			script: func(w *world) {
				w.answers[messages.StageRunTests] = []any{fail("test_f"), pass(3)}
				w.answers[messages.StageDiagnose] = []any{messages.Diagnosis{
					Failures:      []messages.Failure{{TestName: "test_f", ErrorType: messages.ErrorEnvironment}},
					NeedsPackages: []string{"pandas"}}}
				w.answers[messages.StageBuild] = []any{messages.BuildOutput{Image: "env-1"}, messages.BuildOutput{Image: "env-2"}}
			},
			wantStages: []string{"plan", "code", "tests", "build", "run_tests", "diagnose", "build", "run_tests"},
			wantStatus: messages.StatusSucceeded,
			check: func(t *testing.T, s State) {
				if s.Image != "env-2" || !contains(s.Packages, "pandas") {
					t.Errorf("image %s packages %v", s.Image, s.Packages)
				}
			},
		},
		{
			name: "mixed logic and test errors are repaired in one round",
			script: func(w *world) {
				w.answers[messages.StageRunTests] = []any{fail("test_a", "test_b"), pass(3)}
				w.answers[messages.StageDiagnose] = []any{messages.Diagnosis{Failures: []messages.Failure{
					{TestName: "test_a", ErrorType: messages.ErrorLogic}, {TestName: "test_b", ErrorType: messages.ErrorTestError}}}}
				w.answers[messages.StageFix] = []any{messages.Solution{Language: "python", Code: "def f():\n    return 2\n"}}
				w.answers[messages.StagePatchTests] = []any{messages.PatchTestsOutput{Tests: "patched"}}
			},
			wantStages: []string{"plan", "code", "tests", "build", "run_tests", "diagnose", "fix", "patch_tests", "run_tests"},
			wantStatus: messages.StatusSucceeded,
		},
		{
			name: "an environment failure with no package to add goes to a code fix",
			script: func(w *world) {
				w.answers[messages.StageRunTests] = []any{fail("test_f"), pass(3)}
				w.answers[messages.StageDiagnose] = []any{messages.Diagnosis{Failures: []messages.Failure{{TestName: "test_f", ErrorType: messages.ErrorEnvironment}}}}
				w.answers[messages.StageFix] = []any{messages.Solution{Language: "python", Code: "def f():\n    return 2\n"}}
			},
			wantStages: []string{"plan", "code", "tests", "build", "run_tests", "diagnose", "fix", "run_tests"},
			wantStatus: messages.StatusSucceeded,
		},
		{
			name: "an empty diagnosis still changes the code",
			script: func(w *world) {
				w.answers[messages.StageRunTests] = []any{fail("test_f"), pass(3)}
				w.answers[messages.StageDiagnose] = []any{messages.Diagnosis{}}
				w.answers[messages.StageFix] = []any{messages.Solution{Language: "python", Code: "def f():\n    return 2\n"}}
			},
			wantStages: []string{"plan", "code", "tests", "build", "run_tests", "diagnose", "fix", "run_tests"},
			wantStatus: messages.StatusSucceeded,
		},
		{
			name: "max_iterations exhausted",
			spec: func(s *messages.JobSpec) { s.Options.MaxIterations = 2 },
			script: func(w *world) {
				w.answers[messages.StageRunTests] = []any{fail("test_f")}
				w.answers[messages.StageDiagnose] = []any{messages.Diagnosis{Failures: []messages.Failure{{TestName: "test_f", ErrorType: messages.ErrorLogic}}}}
				w.answers[messages.StageFix] = []any{messages.Solution{Language: "python", Code: "def f():\n    return 2\n"}}
			},
			wantStages: []string{"plan", "code", "tests", "build", "run_tests", "diagnose", "fix", "run_tests"},
			wantStatus: messages.StatusFailed,
			wantError:  "tests still failing after 2 iterations (max_iterations)",
		},
		{
			name:       "skip_tests builds code and image only",
			spec:       func(s *messages.JobSpec) { s.Options.SkipTests = true },
			wantStages: []string{"plan", "code", "build"},
			wantStatus: messages.StatusSucceeded,
			check: func(t *testing.T, s State) {
				if !ResultOf(s).SkippedTests {
					t.Error("result does not say tests were skipped")
				}
			},
		},
		{
			name: "imports the scan cannot map are asked of the model once",
			script: func(w *world) {
				w.answers[messages.StageCode] = []any{messages.Solution{Language: "python", Code: "import weirdlib_xyz\n"}}
				w.answers[messages.StagePackages] = []any{messages.Packages{Packages: nil}}
			},
			wantStages: []string{"plan", "code", "tests", "packages", "build", "run_tests"},
			wantStatus: messages.StatusSucceeded,
		},
		{
			name: "an invalid package with no replacement is dropped and the image rebuilt",
			script: func(w *world) {
				w.answers[messages.StageCode] = []any{messages.Solution{Language: "python", Code: "x = 1\n", Packages: []string{"numpy", "nosuchpkg"}}}
				w.answers[messages.StageBuild] = []any{messages.BuildOutput{InvalidPackages: []string{"nosuchpkg"}}, messages.BuildOutput{Image: "env-2"}}
				w.answers[messages.StagePackageReplacement] = []any{messages.PackageReplacement{}}
			},
			wantStages: []string{"plan", "code", "tests", "build", "package_replacement", "build", "run_tests"},
			wantStatus: messages.StatusSucceeded,
			check: func(t *testing.T, s State) {
				if contains(s.Packages, "nosuchpkg") || !contains(s.Packages, "numpy") {
					t.Errorf("packages %v", s.Packages)
				}
			},
		},
		{
			name: "an invalid package is replaced by the model, up to three tries along a chain",
			script: func(w *world) {
				w.answers[messages.StageCode] = []any{messages.Solution{Language: "python", Code: "import cv\n", Packages: []string{"opencv"}}}
				w.answers[messages.StageBuild] = []any{
					messages.BuildOutput{InvalidPackages: []string{"opencv"}},
					messages.BuildOutput{InvalidPackages: []string{"open-cv"}},
					messages.BuildOutput{Image: "env-3"}}
				w.answers[messages.StagePackageReplacement] = []any{
					messages.PackageReplacement{Replacement: ptr("open-cv")},
					messages.PackageReplacement{Replacement: ptr("opencv-python")}}
				w.answers[messages.StagePackages] = []any{messages.Packages{}}
			},
			wantStages: []string{"plan", "code", "tests", "packages", "build", "package_replacement", "build", "package_replacement", "build", "run_tests"},
			wantStatus: messages.StatusSucceeded,
			check: func(t *testing.T, s State) {
				if !contains(s.BuiltPackages, "opencv-python") || contains(s.BuiltPackages, "opencv") || contains(s.BuiltPackages, "open-cv") {
					t.Errorf("built packages %v", s.BuiltPackages)
				}
				if s.ReplaceTries["opencv"] != 2 {
					t.Errorf("tries %v", s.ReplaceTries)
				}
			},
		},
		{
			name: "after three failed replacements the job goes without the package",
			script: func(w *world) {
				w.answers[messages.StageCode] = []any{messages.Solution{Language: "python", Code: "x = 1\n", Packages: []string{"numpy", "ghost"}}}
				w.answers[messages.StageBuild] = []any{
					messages.BuildOutput{InvalidPackages: []string{"ghost"}},
					messages.BuildOutput{InvalidPackages: []string{"ghost1"}},
					messages.BuildOutput{InvalidPackages: []string{"ghost2"}},
					messages.BuildOutput{InvalidPackages: []string{"ghost3"}},
					messages.BuildOutput{Image: "env-5"}}
				w.answers[messages.StagePackageReplacement] = []any{
					messages.PackageReplacement{Replacement: ptr("ghost1")},
					messages.PackageReplacement{Replacement: ptr("ghost2")},
					messages.PackageReplacement{Replacement: ptr("ghost3")}}
			},
			wantStages: []string{"plan", "code", "tests", "build", "package_replacement", "build", "package_replacement", "build",
				"package_replacement", "build", "build", "run_tests"},
			wantStatus: messages.StatusSucceeded,
			check: func(t *testing.T, s State) {
				if !contains(s.BuiltPackages, "numpy") || len(s.BuiltPackages) != 1 {
					t.Errorf("built packages %v", s.BuiltPackages)
				}
			},
		},
		{
			name:    "an acceptance failure sends the code back for a fix",
			spec:    func(s *messages.JobSpec) { s.Outputs = map[string]messages.Type{"n": messages.TypeInt} },
			samples: sales,
			script: func(w *world) {
				w.answers[messages.StageAcceptance] = []any{messages.AcceptanceOutput{Problems: []string{"output n missing"}}, messages.AcceptanceOutput{OK: true, Outputs: map[string]any{"n": 1}}}
				w.answers[messages.StageFix] = []any{messages.Solution{Language: "python", Code: "def f():\n    return 2\n"}}
			},
			wantStages: []string{"profile", "plan", "code", "tests", "build", "run_tests", "acceptance", "fix", "run_tests", "acceptance"},
			wantStatus: messages.StatusSucceeded,
		},
		{
			name:       "a permanent stage error fails the job",
			script:     func(w *world) { w.errs[messages.StageCode] = messages.ErrorPermanent },
			wantStages: []string{"plan", "code", "tests"},
			wantStatus: messages.StatusFailed,
			wantError:  "stage code failed: boom",
		},
		{
			name:       "an infrastructure error errors the job",
			script:     func(w *world) { w.errs[messages.StagePlan] = messages.ErrorInfra },
			wantStages: []string{"plan"},
			wantStatus: messages.StatusErrored,
			wantError:  "stage plan failed: boom",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			if tc.script != nil {
				tc.script(w)
			}
			spec := baseSpec()
			if tc.spec != nil {
				tc.spec(&spec)
			}
			s, _, cmds := run(t, w, spec, tc.samples)
			if diff := cmp.Diff(tc.wantStages, stagesOf(cmds)); diff != "" {
				t.Errorf("stages (-want +got):\n%s", diff)
			}
			if s.Status != tc.wantStatus {
				t.Errorf("status = %s (%s), want %s", s.Status, s.Error, tc.wantStatus)
			}
			if !strings.Contains(s.Error, tc.wantError) {
				t.Errorf("error = %q, want it to contain %q", s.Error, tc.wantError)
			}
			var finishes int
			for _, c := range cmds {
				if c.Finish != nil {
					finishes++
					if c.Finish.Success != (tc.wantStatus == messages.StatusSucceeded) {
						t.Errorf("finish success = %v", c.Finish.Success)
					}
				}
			}
			if finishes != 1 {
				t.Errorf("%d finish commands, want 1", finishes)
			}
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

func TestStaleAndDuplicateEventsChangeNothing(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	spec := baseSpec()
	spec.Normalize("")
	s, cmds := Step(State{}, Input{Kind: InputSubmitted, Time: t0, Submit: &Submission{JobID: "j", Spec: spec}})
	plan := cmds[1].Dispatch
	if plan == nil || plan.Stage != messages.StagePlan {
		t.Fatalf("first dispatch = %+v", cmds)
	}
	res := w.answer(plan)

	// A second submission of the same job is ignored.
	if s2, c := Step(s, Input{Kind: InputSubmitted, Time: t0, Submit: &Submission{JobID: "j", Spec: spec}}); c != nil || !equalJSON(s, s2) {
		t.Error("duplicate submission changed the state")
	}
	// A result for an unknown seq, or the right seq with the wrong stage, is ignored.
	bogus := *res
	bogus.Seq = 99
	if s2, c := Step(s, Input{Kind: InputStageResult, Time: t0, Result: &bogus}); c != nil || !equalJSON(s, s2) {
		t.Error("unknown seq changed the state")
	}
	wrong := *res
	wrong.Stage = messages.StageCode
	if s2, c := Step(s, Input{Kind: InputStageResult, Time: t0, Result: &wrong}); c != nil || !equalJSON(s, s2) {
		t.Error("wrong stage changed the state")
	}
	// The real result advances; delivering it again does nothing.
	s3, c := Step(s, Input{Kind: InputStageResult, Time: t0, Result: res})
	if len(c) == 0 {
		t.Fatal("plan result produced no commands")
	}
	if s4, c := Step(s3, Input{Kind: InputStageResult, Time: t0, Result: res}); c != nil || !equalJSON(s3, s4) {
		t.Error("redelivered result changed the state")
	}
	// Cancel finishes the job; later results are stale.
	s5, c := Step(s3, Input{Kind: InputCancel, Time: t0, Reason: "user"})
	if !s5.Done() || s5.Status != messages.StatusFailed || len(s5.Pending) != 0 || len(c) == 0 {
		t.Errorf("cancel: done=%v status=%s pending=%v", s5.Done(), s5.Status, s5.Pending)
	}
	if _, c := Step(s5, Input{Kind: InputCancel, Time: t0}); c != nil {
		t.Error("cancel after done produced commands")
	}
}

func TestMalformedOutputErrorsTheJob(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.Normalize("")
	s, cmds := Step(State{}, Input{Kind: InputSubmitted, Time: t0, Submit: &Submission{JobID: "j", Spec: spec}})
	d := cmds[1].Dispatch
	s, _ = Step(s, Input{Kind: InputStageResult, Time: t0, Result: &messages.StageResult{JobID: "j", Seq: d.Seq, Stage: d.Stage, Output: json.RawMessage(`"not a plan"`)}})
	if s.Status != messages.StatusErrored || !strings.Contains(s.Error, "malformed output") {
		t.Errorf("status %s error %q", s.Status, s.Error)
	}
}

// TestRandomEventsKeepInvariants feeds random mixes of real, stale, duplicate
// and failing results: Step never panics, seqs are never reused, and a done
// job has nothing pending and accepts nothing more.
func TestRandomEventsKeepInvariants(t *testing.T) {
	t.Parallel()
	stages := []messages.Stage{messages.StagePlan, messages.StageCode, messages.StageTests, messages.StageBuild,
		messages.StageRunTests, messages.StageDiagnose, messages.StageFix, messages.StagePatchTests, messages.StageAcceptance, messages.StageProfile}
	for seed := int64(0); seed < 25; seed++ {
		rng := rand.New(rand.NewSource(seed))
		w := newWorld(t)
		w.answers[messages.StageRunTests] = []any{fail("test_f"), fail("test_g"), pass(2)}
		w.answers[messages.StageDiagnose] = []any{messages.Diagnosis{Failures: []messages.Failure{{TestName: "test_f", ErrorType: []messages.ErrorType{"logic", "test_error", "environment", "bogus"}[rng.Intn(4)]}}, NeedsPackages: []string{"numpy"}}}
		w.answers[messages.StageFix] = []any{messages.Solution{Language: "python", Code: "x=1\n"}}
		w.answers[messages.StagePatchTests] = []any{messages.PatchTestsOutput{Tests: "t"}}
		spec := baseSpec()
		spec.Outputs = map[string]messages.Type{"n": messages.TypeInt}
		spec.Normalize("")
		s, cmds := Step(State{}, Input{Kind: InputSubmitted, Time: t0, Submit: &Submission{JobID: "j", Spec: spec}})
		var inflight []*messages.StageResult
		seen := map[int]bool{}
		for step := 0; step < 200; step++ {
			for _, c := range cmds {
				if d := c.Dispatch; d != nil {
					if seen[d.Seq] {
						t.Fatalf("seed %d: seq %d reused", seed, d.Seq)
					}
					seen[d.Seq] = true
					inflight = append(inflight, w.answer(d))
				}
			}
			if s.Done() {
				if len(s.Pending) != 0 {
					t.Fatalf("seed %d: done with pending %v", seed, s.Pending)
				}
			}
			var ev Input
			switch k := rng.Intn(10); {
			case k < 6 && len(inflight) > 0: // a real result, in random order
				i := rng.Intn(len(inflight))
				r := inflight[i]
				inflight = append(inflight[:i], inflight[i+1:]...)
				if rng.Intn(4) == 0 {
					inflight = append(inflight, r) // and deliver it again later
				}
				ev = Input{Kind: InputStageResult, Time: t0, Result: r}
			case k < 8: // a bogus result
				r := &messages.StageResult{JobID: "j", Seq: rng.Intn(20), Stage: stages[rng.Intn(len(stages))], Output: json.RawMessage(`{}`)}
				if rng.Intn(3) == 0 {
					r.Error, r.ErrorKind = "x", messages.ErrorInfra
				}
				ev = Input{Kind: InputStageResult, Time: t0, Result: r}
			case k == 8:
				ev = Input{Kind: InputStageResult, Time: t0} // nil result
			default:
				ev = Input{Kind: InputKind("unknown"), Time: t0}
			}
			wasDone := s.Done()
			s, cmds = Step(s, ev)
			if wasDone && len(cmds) != 0 {
				t.Fatalf("seed %d: commands after done", seed)
			}
		}
	}
}

// replayScenarios record the event logs in testdata (go test -update):
// each scripts a world, a spec and samples.
var replayScenarios = map[string]func(w *world) (messages.JobSpec, []messages.SampleRef){
	// A test patch that does not help, a logic fix with a package, acceptance.
	"repair": func(w *world) (messages.JobSpec, []messages.SampleRef) {
		w.answers[messages.StageRunTests] = []any{fail("test_f"), fail("test_f"), pass(3)}
		w.answers[messages.StageDiagnose] = []any{
			messages.Diagnosis{Failures: []messages.Failure{{TestName: "test_f", ErrorType: messages.ErrorTestError}}},
			messages.Diagnosis{Failures: []messages.Failure{{TestName: "test_f", ErrorType: messages.ErrorLogic}}, NeedsPackages: []string{"pandas"}}}
		w.answers[messages.StagePatchTests] = []any{messages.PatchTestsOutput{Tests: "patched"}}
		w.answers[messages.StageFix] = []any{messages.Solution{Language: "python", Code: "import pandas\n"}}
		spec := baseSpec()
		spec.Outputs = map[string]messages.Type{"n": messages.TypeInt}
		return spec, []messages.SampleRef{{Name: "s", Object: "sha256:" + strings.Repeat("b", 64) + ".csv", FileName: "s.csv"}}
	},
	// A mixed round whose fix is not applied at first (escalation), whose
	// wrong test is then moved to logic after its patch did not help.
	"converge": func(w *world) (messages.JobSpec, []messages.SampleRef) {
		convergeWorld(w)
		return baseSpec(), nil
	},
	// A loop that makes no progress: regenerations, then a stop.
	"stuck": func(w *world) (messages.JobSpec, []messages.SampleRef) {
		stuckWorld(w)
		return baseSpec(), nil
	},
	// Three candidates; the second passes.
	"candidates": func(w *world) (messages.JobSpec, []messages.SampleRef) {
		candidatesWorld(w, 2)
		spec := baseSpec()
		spec.Options.Candidates = 3
		return spec, nil
	},
}

// TestReplay replays recorded event logs and compares the final states with
// the recorded ones, as Temporal's replayer does: a change to Step that would
// change the outcome of a recorded job shows up here.
func TestReplay(t *testing.T) {
	t.Parallel()
	if *update {
		for name, scenario := range replayScenarios {
			w := newWorld(t)
			spec, samples := scenario(w)
			final, events, _ := run(t, w, spec, samples)
			writeLog(t, "testdata/"+name+".events.jsonl", events)
			writeJSON(t, "testdata/"+name+".final.json", final)
		}
	}
	logs, _ := filepath.Glob("testdata/*.events.jsonl")
	if len(logs) < len(replayScenarios) {
		t.Fatalf("%d recorded event logs in testdata, want %d (run with -update)", len(logs), len(replayScenarios))
	}
	for _, path := range logs {
		var s State
		for _, ev := range readLog(t, path) {
			s, _ = Step(s, ev)
		}
		want, err := os.ReadFile(strings.TrimSuffix(path, ".events.jsonl") + ".final.json")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.MarshalIndent(s, "", "  ")
		if diff := cmp.Diff(strings.TrimSpace(string(want)), strings.TrimSpace(string(got))); diff != "" {
			t.Errorf("%s: replayed state differs (-recorded +replayed):\n%s", path, diff)
		}
	}
}

func writeLog(t *testing.T, path string, events []Input) {
	var buf bytes.Buffer
	for _, ev := range events {
		b, _ := json.Marshal(ev)
		buf.Write(append(b, '\n'))
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeJSON(t *testing.T, path string, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readLog(t *testing.T, path string) []Input {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Input
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev Input
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, ev)
	}
	return out
}

func equalJSON(a, b State) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func ptr(s string) *string { return &s }
