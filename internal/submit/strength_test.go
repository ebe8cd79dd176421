package submit

import (
	"strings"
	"testing"

	"github.com/autocoder/autocoder/pkg/messages"
)

func TestPrintStrength(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	printStrength(&b, &messages.StrengthReport{
		TestStrength: messages.TestStrength{Mutants: 10, Killed: 8, Survived: 1, Equivalent: 1, Score: 8.0 / 9,
			Survivors: []messages.SurvivingMutant{{Line: 4, Description: "< -> <=", Operator: "boundary", Witness: "f(3)"}}},
		Scores: []float64{0.4, 8.0 / 9}, Rounds: 1, Usage: messages.Usage{Calls: 1, InputTokens: 900, OutputTokens: 100}, MinTestStrength: 0.8,
	})
	want := "test strength: 0.89 (8 of 9 mutants killed, 1 equivalent; min_test_strength 0.80); 0.40 before 1 strengthening round(s): 1 model call(s), 1000 tokens\n" +
		"  surviving: line 4, < -> <= (boundary), differs at f(3)\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	printStrength(&b, &messages.StrengthReport{TestStrength: messages.TestStrength{Error: "the tests do not pass on solution.py"}})
	if b.String() != "test strength: not measured: the tests do not pass on solution.py\n" {
		t.Errorf("got %q", b.String())
	}
	b.Reset()
	printStrength(&b, nil)
	if b.Len() != 0 {
		t.Errorf("nothing to print, got %q", b.String())
	}
}
