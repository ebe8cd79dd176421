package machine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/pkg/messages"
)

// strengthSpec plans first, as the world these tests script does
// (firstpass_test.go has the one-round first pass).
func strengthSpec(edit func(*messages.Options)) messages.JobSpec {
	spec := messages.JobSpec{Prompt: "return one", Options: messages.Options{FirstPass: messages.FirstPassPlanFirst}}
	if edit != nil {
		edit(&spec.Options)
	}
	return spec
}

func weak(score float64) messages.TestStrength {
	return messages.TestStrength{Points: 4, Mutants: 4, Killed: int(score * 4), Survived: 4 - int(score*4), Score: score,
		Survivors: []messages.SurvivingMutant{{ID: 1, Operator: "boundary", Line: 2, Description: "< -> <=", Diff: "-a\n+b\n",
			Witness: "f(3)", Original: "2", Mutant: "3", Near: true}}}
}

var strong = messages.TestStrength{Points: 4, Mutants: 4, Killed: 4, Score: 1}

const strongerTests = "from solution import f\n\ndef test_f():\n    assert f() == 1\n\ndef test_edge():\n    assert f() != 2\n"

func TestStrengthLoop(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		spec       func(*messages.Options)
		script     func(*world)
		wantStages []string
		wantStatus messages.JobStatus
		check      func(*testing.T, State)
	}{
		{
			name:       "strong tests are measured and cost no model call",
			script:     func(w *world) { w.answers[messages.StageMutate] = []any{strong} },
			wantStages: []string{"plan", "code", "tests", "build", "run_tests", "mutate"},
			wantStatus: messages.StatusSucceeded,
			check: func(t *testing.T, s State) {
				r := ResultOf(s).TestStrength
				if r == nil || r.Score != 1 || r.Rounds != 0 || r.Usage.Calls != 0 || !strings.Contains(r.Outcome, "at least 0.80") {
					t.Errorf("test_strength %+v", r)
				}
			},
		},
		{
			name: "weak tests are strengthened, run on the solution and measured again",
			script: func(w *world) {
				w.answers[messages.StageMutate] = []any{weak(0.5), strong}
				w.answers[messages.StageStrengthenTests] = []any{messages.Tests{Code: strongerTests}}
			},
			wantStages: []string{"plan", "code", "tests", "build", "run_tests", "mutate", "strengthen_tests", "run_tests", "mutate"},
			wantStatus: messages.StatusSucceeded,
			check: func(t *testing.T, s State) {
				r := ResultOf(s).TestStrength
				if r == nil || !cmp.Equal(r.Scores, []float64{0.5, 1}) || r.Rounds != 1 || r.Usage.Calls != 1 || r.InitialScore() != 0.5 {
					t.Errorf("test_strength %+v", r)
				}
				if s.Tests.Code != strongerTests {
					t.Error("the stronger tests were not kept")
				}
			},
		},
		{
			name: "a stronger test that fails on the solution is diagnosed, and the code repaired",
			script: func(w *world) {
				w.answers[messages.StageMutate] = []any{weak(0.5), strong}
				w.answers[messages.StageStrengthenTests] = []any{messages.Tests{Code: strongerTests}}
				w.answers[messages.StageRunTests] = []any{pass(1), fail("test_edge"), pass(2)}
				w.answers[messages.StageDiagnose] = []any{messages.Diagnosis{Failures: []messages.Failure{{TestName: "test_edge", ErrorType: messages.ErrorLogic, SuggestedFix: "return 1"}}}}
				w.answers[messages.StageFix] = []any{messages.Solution{Language: "python", Code: "def f():\n    return 1  # fixed\n"}}
				w.answers[messages.StageVerify] = []any{messages.FixVerification{AllFixesApplied: true}}
			},
			wantStages: []string{"plan", "code", "tests", "build", "run_tests", "mutate", "strengthen_tests", "run_tests",
				"diagnose", "fix", "verify", "run_tests", "mutate"},
			wantStatus: messages.StatusSucceeded,
			check: func(t *testing.T, s State) {
				if !strings.Contains(s.Solution.Code, "fixed") || s.Iteration != 3 {
					t.Errorf("iteration %d, code %q", s.Iteration, s.Solution.Code)
				}
			},
		},
		{
			name: "stronger tests that still fail when the test runs run out give way to the tests that passed",
			spec: func(o *messages.Options) { o.MaxIterations = 2 },
			script: func(w *world) {
				w.answers[messages.StageMutate] = []any{weak(0.5)}
				w.answers[messages.StageStrengthenTests] = []any{messages.Tests{Code: strongerTests}}
				w.answers[messages.StageRunTests] = []any{pass(1), fail("test_edge")}
			},
			wantStages: []string{"plan", "code", "tests", "build", "run_tests", "mutate", "strengthen_tests", "run_tests"},
			wantStatus: messages.StatusSucceeded,
			check: func(t *testing.T, s State) {
				if s.Tests.Code == strongerTests || s.LastReport == nil || !s.LastReport.OK() {
					t.Errorf("kept tests %q, report %+v: want the tests that passed, and their report", s.Tests.Code, s.LastReport)
				}
				if r := s.Strength; r == nil || !strings.Contains(r.Outcome, "still failed") || r.Score != 0.5 {
					t.Errorf("test_strength %+v", r)
				}
			},
		},
		{
			// The world's results count 15 tokens each: six (90) when the
			// strengthening is decided, under the budget of 100; eight
			// (120) after the stronger tests' run, so their diagnosis is
			// not called.
			name: "stronger tests that still fail when the token budget runs out give way to the tests that passed",
			spec: func(o *messages.Options) { o.TokenBudget = 100 },
			script: func(w *world) {
				w.answers[messages.StageMutate] = []any{weak(0.5)}
				w.answers[messages.StageStrengthenTests] = []any{messages.Tests{Code: strongerTests}}
				w.answers[messages.StageRunTests] = []any{pass(1), fail("test_edge")}
			},
			wantStages: []string{"plan", "code", "tests", "build", "run_tests", "mutate", "strengthen_tests", "run_tests"},
			wantStatus: messages.StatusSucceeded,
			check: func(t *testing.T, s State) {
				if s.Tests.Code == strongerTests || s.LastReport == nil || !s.LastReport.OK() {
					t.Errorf("kept tests %q, report %+v: want the tests that passed, and their report", s.Tests.Code, s.LastReport)
				}
				if r := s.Strength; r == nil || !strings.Contains(r.Outcome, "token budget") {
					t.Errorf("test_strength %+v", r)
				}
			},
		},
		{
			name: "stronger tests whose repair fails give way to the tests that passed",
			script: func(w *world) {
				w.answers[messages.StageMutate] = []any{weak(0.5)}
				w.answers[messages.StageStrengthenTests] = []any{messages.Tests{Code: strongerTests}}
				w.answers[messages.StageRunTests] = []any{pass(1), fail("test_edge")}
				w.errs[messages.StageDiagnose] = messages.ErrorPermanent
			},
			wantStages: []string{"plan", "code", "tests", "build", "run_tests", "mutate", "strengthen_tests", "run_tests", "diagnose"},
			wantStatus: messages.StatusSucceeded,
			check: func(t *testing.T, s State) {
				if s.Tests.Code == strongerTests {
					t.Errorf("kept tests %q: want the tests that passed", s.Tests.Code)
				}
				if r := s.Strength; r == nil || !strings.Contains(r.Outcome, "diagnose stage failed") {
					t.Errorf("test_strength %+v", r)
				}
			},
		},
		{
			name: "a measurement that failed adds no score",
			script: func(w *world) {
				w.answers[messages.StageMutate] = []any{weak(0.5), messages.TestStrength{Score: 1, Error: "the budget ran out"}}
				w.answers[messages.StageStrengthenTests] = []any{messages.Tests{Code: strongerTests}}
			},
			wantStages: []string{"plan", "code", "tests", "build", "run_tests", "mutate", "strengthen_tests", "run_tests", "mutate"},
			wantStatus: messages.StatusSucceeded,
			check: func(t *testing.T, s State) {
				if r := s.Strength; r == nil || !cmp.Equal(r.Scores, []float64{0.5}) || !strings.Contains(r.Outcome, "not measured") {
					t.Errorf("test_strength %+v", r)
				}
			},
		},
		{
			name:       "mutation: measure makes no model call",
			spec:       func(o *messages.Options) { o.Mutation = messages.MutationMeasure },
			script:     func(w *world) { w.answers[messages.StageMutate] = []any{weak(0.25)} },
			wantStages: []string{"plan", "code", "tests", "build", "run_tests", "mutate"},
			wantStatus: messages.StatusSucceeded,
			check: func(t *testing.T, s State) {
				if r := s.Strength; r == nil || r.Score != 0.25 || !strings.Contains(r.Outcome, "measured only") {
					t.Errorf("test_strength %+v", r)
				}
			},
		},
		{
			name:       "mutation: off measures nothing",
			spec:       func(o *messages.Options) { o.Mutation = messages.MutationOff },
			wantStages: []string{"plan", "code", "tests", "build", "run_tests"},
			wantStatus: messages.StatusSucceeded,
			check: func(t *testing.T, s State) {
				if ResultOf(s).TestStrength != nil {
					t.Error("test_strength without mutation")
				}
			},
		},
		{
			name: "strengthening stops after strengthen_rounds",
			spec: func(o *messages.Options) { o.StrengthenRounds = 2 },
			script: func(w *world) {
				w.answers[messages.StageMutate] = []any{weak(0.5)}
				w.fn[messages.StageStrengthenTests] = func(_ *messages.StageCommand, n int) any {
					return messages.Tests{Code: strongerTests + strings.Repeat("\n# more\n", n+1)}
				}
			},
			wantStages: []string{"plan", "code", "tests", "build", "run_tests", "mutate", "strengthen_tests", "run_tests", "mutate",
				"strengthen_tests", "run_tests", "mutate"},
			wantStatus: messages.StatusSucceeded,
			check: func(t *testing.T, s State) {
				if r := s.Strength; r == nil || r.Rounds != 2 || !strings.Contains(r.Outcome, "after 2 strengthening rounds") {
					t.Errorf("test_strength %+v", r)
				}
			},
		},
		{
			name: "tests the model does not change end the loop",
			script: func(w *world) {
				w.answers[messages.StageMutate] = []any{weak(0.5)}
				w.answers[messages.StageStrengthenTests] = []any{newWorld(t).answers[messages.StageTests][0]}
			},
			wantStages: []string{"plan", "code", "tests", "build", "run_tests", "mutate", "strengthen_tests"},
			wantStatus: messages.StatusSucceeded,
			check: func(t *testing.T, s State) {
				if r := s.Strength; r == nil || !strings.Contains(r.Outcome, "tests it had") {
					t.Errorf("test_strength %+v", r)
				}
			},
		},
		{
			name:       "no strengthening without a test run left",
			spec:       func(o *messages.Options) { o.MaxIterations = 1 },
			script:     func(w *world) { w.answers[messages.StageMutate] = []any{weak(0.5)} },
			wantStages: []string{"plan", "code", "tests", "build", "run_tests", "mutate"},
			wantStatus: messages.StatusSucceeded,
			check: func(t *testing.T, s State) {
				if r := s.Strength; r == nil || !strings.Contains(r.Outcome, "max_iterations") {
					t.Errorf("test_strength %+v", r)
				}
			},
		},
		{
			name:       "a failed measurement is noted and the job goes on",
			script:     func(w *world) { w.errs[messages.StageMutate] = messages.ErrorInfra },
			wantStages: []string{"plan", "code", "tests", "build", "run_tests", "mutate"},
			wantStatus: messages.StatusSucceeded,
			check: func(t *testing.T, s State) {
				if r := s.Strength; r == nil || !strings.Contains(r.Outcome, "mutate stage failed") {
					t.Errorf("test_strength %+v", r)
				}
			},
		},
		{
			name: "a failed re-measurement leaves the stronger tests unmeasured, not with the old score",
			script: func(w *world) {
				w.fn[messages.StageMutate] = func(_ *messages.StageCommand, n int) any {
					if n == 0 {
						return weak(0.5)
					}
					return messages.ErrorInfra
				}
				w.answers[messages.StageStrengthenTests] = []any{messages.Tests{Code: strongerTests}}
			},
			wantStages: []string{"plan", "code", "tests", "build", "run_tests", "mutate", "strengthen_tests", "run_tests", "mutate"},
			wantStatus: messages.StatusSucceeded,
			check: func(t *testing.T, s State) {
				r := ResultOf(s).TestStrength
				if r == nil || r.Error == "" || r.Score != 0 || len(r.Survivors) != 0 || r.Killed+r.Survived != 0 ||
					!cmp.Equal(r.Scores, []float64{0.5}) || !strings.Contains(r.Outcome, "mutate stage failed") {
					t.Errorf("test_strength %+v", r)
				}
				if s.Tests.Code != strongerTests {
					t.Error("the stronger tests were not kept")
				}
			},
		},
		{
			name: "a measurement that judged no mutant has no score and passes nothing",
			script: func(w *world) {
				// as an older worker reported a budget that ran out first
				w.answers[messages.StageMutate] = []any{messages.TestStrength{Points: 3, Mutants: 3, NotRun: 3, Partial: true, Score: 1}}
			},
			wantStages: []string{"plan", "code", "tests", "build", "run_tests", "mutate"},
			wantStatus: messages.StatusSucceeded,
			check: func(t *testing.T, s State) {
				r := ResultOf(s).TestStrength
				if r == nil || len(r.Scores) != 0 || r.Score != 0 || !strings.HasPrefix(r.Error, messages.NotJudged) ||
					!strings.Contains(r.Outcome, "not measured") || strings.Contains(r.Outcome, "min_test_strength") {
					t.Errorf("test_strength %+v", r)
				}
			},
		},
		{
			name: "tests that could not be measured are not strengthened",
			script: func(w *world) {
				w.answers[messages.StageMutate] = []any{messages.TestStrength{Score: 1, Error: "the tests do not pass"}}
			},
			wantStages: []string{"plan", "code", "tests", "build", "run_tests", "mutate"},
			wantStatus: messages.StatusSucceeded,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			if tc.script != nil {
				tc.script(w)
			}
			s, _, cmds := run(t, w, strengthSpec(tc.spec), nil)
			if diff := cmp.Diff(tc.wantStages, stagesOf(cmds)); diff != "" {
				t.Errorf("stages (-want +got):\n%s", diff)
			}
			if s.Status != tc.wantStatus {
				t.Errorf("status %s (%s), want %s", s.Status, s.Error, tc.wantStatus)
			}
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

// The mutate stage gets the job's code, tests, environment and mutation
// options; the strengthening call gets the survivors.
func TestStrengthInputs(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.answers[messages.StageMutate] = []any{weak(0.5), strong}
	w.answers[messages.StageStrengthenTests] = []any{messages.Tests{Code: strongerTests}}
	_, _, cmds := run(t, w, strengthSpec(func(o *messages.Options) { o.MaxMutants = 7 }), nil)
	var mutate messages.MutateInput
	var strengthen messages.StrengthenTestsInput
	for _, c := range cmds {
		switch d := c.Dispatch; {
		case d == nil:
		case d.Stage == messages.StageMutate && mutate.Code == "":
			mustDecode(t, d.Input, &mutate)
		case d.Stage == messages.StageStrengthenTests:
			mustDecode(t, d.Input, &strengthen)
		}
	}
	if mutate.Image != "env-1" || mutate.MaxMutants != 7 || mutate.Budget.Std() != messages.DefaultMutationBudget || !strings.Contains(mutate.Tests, "def test_f") {
		t.Errorf("mutate input %+v", mutate)
	}
	if strengthen.Round != 1 || len(strengthen.Strength.Survivors) != 1 || strengthen.Strength.Survivors[0].Witness != "f(3)" || strengthen.Task.Prompt != "return one" {
		t.Errorf("strengthen input %+v", strengthen)
	}
}

func mustDecode(t *testing.T, raw []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatal(err)
	}
}
