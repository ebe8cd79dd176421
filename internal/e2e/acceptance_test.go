package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/pkg/messages"
)

// End-to-end tests of the acceptance run (issue 4): the tests pass, then
// the script runs on its own and every declared output must exist and
// parse to its type. A failure there goes back to a fix, like a failing
// test; after max_iterations the job fails naming the output.

// writesCode is a script whose answer() is right (so the tests pass) and
// whose main block writes the outputs given as Python statements.
func writesCode(body string) string {
	return `import argparse
import datetime
import os


def answer():
    return 6 * 7


def main(argv=None):
    argparse.ArgumentParser(description="the answer").parse_args(argv)
    os.makedirs("/var/outputs", exist_ok=True)
` + body + `

if __name__ == "__main__":
    main()
`
}

func write(name, expr string) string {
	return "    with open(\"/var/outputs/" + name + "\", \"w\") as f:\n        f.write(" + expr + ")\n"
}

// TestAcceptanceFailureIsFixedThenFails: a script whose tests pass but
// whose run on its own leaves a bad output is sent back to a fix with the
// problem; when the fix does not cure it, the job ends success=false with
// a reason that names the output.
func TestAcceptanceFailureIsFixedThenFails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		outputs map[string]messages.Type
		// Two solutions: the first code and the fix, both wrong in the
		// same way (different text, so the loop does not stop early as
		// "the same code").
		first, fixed string
		// The reason must name the output and say what is wrong.
		wantReason []string
	}{
		{
			name:       "mistyped int",
			outputs:    map[string]messages.Type{"answer": messages.TypeInt},
			first:      writesCode(write("answer", `"forty-two"`)),
			fixed:      writesCode("    # fixed, says the model\n" + write("answer", `"forty-two"`)),
			wantReason: []string{"output answer (int)", `"forty-two" is not an integer`},
		},
		{
			name:       "bool as Python writes it",
			outputs:    map[string]messages.Type{"answer": messages.TypeInt, "checked": messages.TypeBool},
			first:      writesCode(write("answer", "str(answer())") + write("checked", "str(True)")),
			fixed:      writesCode("    # fixed, says the model\n" + write("answer", "str(answer())") + write("checked", "str(True)")),
			wantReason: []string{"output checked (bool)", `"True" is not a bool: write true or false`},
		},
		{
			name:       "missing output",
			outputs:    map[string]messages.Type{"answer": messages.TypeInt, "checked": messages.TypeBool},
			first:      writesCode(write("answer", "str(answer())")),
			fixed:      writesCode("    # fixed, says the model\n" + write("answer", "str(answer())")),
			wantReason: []string{"output checked (bool)", "/var/outputs/checked was not written"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := fakellm.New()
			defer fake.Close()
			scriptBasics(fake, sol(tc.first), sol(tc.fixed))
			st := startLocal(t, testConfig(t, fake))
			spec := answerSpec()
			spec.Outputs = tc.outputs
			spec.Options.MaxIterations = 2
			// Measured, not strengthened: this test is about the acceptance run.
			spec.Options.Mutation = messages.MutationMeasure
			res := runJob(t, st, spec)
			if res.Success {
				t.Fatalf("job succeeded with a bad output: outputs %v", res.Outputs)
			}
			for _, want := range tc.wantReason {
				if !strings.Contains(res.Error, want) {
					t.Errorf("reason %q lacks %q", res.Error, want)
				}
			}
			if !strings.Contains(res.Error, "acceptance run failed") {
				t.Errorf("reason %q does not say the acceptance run failed", res.Error)
			}
			// The loop tried: the tests passed, the acceptance run failed,
			// a fix was asked for with the problem, and the fixed code was
			// tested and run again.
			// (code and tests are written concurrently, in either order.)
			got := stageNames(res)
			if len(got) > 3 {
				slices.Sort(got[1:3])
			}
			// Each passing run's tests are measured (mutate) before the acceptance run.
			want := []string{"plan", "code", "tests", "build", "run_tests", "mutate", "acceptance", "fix", "run_tests", "mutate", "acceptance"}
			if !slices.Equal(got, want) {
				t.Errorf("stages %v, want %v", stageNames(res), want)
			}
			reqs := solutionRequests(fake)
			if len(reqs) != 2 {
				t.Fatalf("%d solution requests, want the code and one fix", len(reqs))
			}
			for _, want := range tc.wantReason {
				if !strings.Contains(reqs[1], want) {
					t.Errorf("the fix request lacks the acceptance problem %q:\n%s", want, reqs[1])
				}
			}
			if res.Solution.Code != tc.fixed {
				t.Error("the result does not carry the fixed code")
			}
			if res.Attempts != 2 {
				t.Errorf("attempts %d, want 2", res.Attempts)
			}
		})
	}
}

// TestAcceptanceFixSucceeds: an acceptance failure whose fix writes the
// output right ends in success, with the typed value.
func TestAcceptanceFixSucceeds(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	scriptBasics(fake, sol(writesCode(write("answer", `"forty-two"`))), sol(writesCode(write("answer", "str(answer())"))))
	st := startLocal(t, testConfig(t, fake))
	res := runJob(t, st, answerSpec())
	requireSuccess(t, res)
	if res.Outputs["answer"] != 42.0 || countStage(res, messages.StageAcceptance) != 2 || countStage(res, messages.StageFix) != 1 {
		t.Errorf("outputs %v, stages %v: want 42 after one fix", res.Outputs, stageNames(res))
	}
}

// TestDatetimeAndTimedeltaOutputs: datetime and timedelta outputs, written
// in the forms the prompt asks for (and the other forms Contract 2 (docs/contracts.md) allows),
// come back typed on the result: datetimes as normalized ISO-8601 text,
// timedeltas as seconds.
func TestDatetimeAndTimedeltaOutputs(t *testing.T) {
	t.Parallel()
	body := write("answer", "str(answer())") +
		write("when", "datetime.datetime(2024, 5, 1, 13, 30, tzinfo=datetime.timezone.utc).isoformat()") +
		write("naive", "str(datetime.datetime(2024, 5, 1, 13, 30, 15, 250000))") +
		write("took", "str(datetime.timedelta(hours=1, minutes=30).total_seconds())") +
		write("span", `"P1DT2H3M4.5S"`) +
		write("ok", `"true"`)
	fake := fakellm.New()
	defer fake.Close()
	scriptBasics(fake, sol(writesCode(body)))
	st := startLocal(t, testConfig(t, fake))
	spec := answerSpec()
	spec.Outputs = map[string]messages.Type{
		"answer": messages.TypeInt, "when": messages.TypeDatetime, "naive": messages.TypeDatetime,
		"took": messages.TypeTimedelta, "span": messages.TypeTimedelta, "ok": messages.TypeBool,
	}
	res := runJob(t, st, spec)
	requireSuccess(t, res)
	want := map[string]any{
		"answer": 42.0,
		"when":   "2024-05-01T13:30:00Z",
		"naive":  "2024-05-01T13:30:15.25",
		"took":   5400.0,
		"span":   93784.5,
		"ok":     true,
	}
	for k, v := range want {
		if res.Outputs[k] != v {
			t.Errorf("outputs[%s] = %#v, want %#v", k, res.Outputs[k], v)
		}
	}
	if len(res.Outputs) != len(want) {
		t.Errorf("outputs %v, want %v", res.Outputs, want)
	}
	if countStage(res, messages.StageAcceptance) != 1 || countStage(res, messages.StageFix) != 0 {
		t.Errorf("stages %v: want one acceptance run and no fix", stageNames(res))
	}
}
