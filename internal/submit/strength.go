package submit

import (
	"fmt"
	"io"

	"github.com/autocoder/autocoder/pkg/messages"
)

// maxViewSurvivors bounds the surviving mutants the view lists.
const maxViewSurvivors = 3

// printStrength is the view's test-strength line: the score by mutation,
// how strengthening changed it and what it cost, and a few survivors.
func printStrength(w io.Writer, ts *messages.StrengthReport) {
	if ts == nil {
		return
	}
	if ts.Error != "" {
		fmt.Fprintf(w, "test strength: not measured: %s\n", messages.Printable(oneLine(ts.Error)))
		return
	}
	fmt.Fprintf(w, "test strength: %.2f (%d of %d mutants killed", ts.Score, ts.Killed, ts.Judged())
	if ts.Equivalent > 0 {
		fmt.Fprintf(w, ", %d equivalent", ts.Equivalent)
	}
	if ts.Partial {
		fmt.Fprintf(w, ", %d not run: time budget", ts.NotRun)
	}
	if ts.MinTestStrength > 0 { // none with mutation: measure
		fmt.Fprintf(w, "; min_test_strength %.2f", ts.MinTestStrength)
	}
	fmt.Fprint(w, ")")
	if ts.Rounds > 0 {
		fmt.Fprintf(w, "; %.2f before %d strengthening round(s): %d model call(s), %d tokens",
			ts.InitialScore(), ts.Rounds, ts.Usage.Calls, ts.Usage.InputTokens+ts.Usage.OutputTokens)
	}
	fmt.Fprintln(w)
	for i, s := range ts.Survivors {
		if i == maxViewSurvivors {
			fmt.Fprintf(w, "  ... %d more surviving\n", ts.Survived-i)
			break
		}
		where := ""
		if s.Witness != "" {
			where = ", differs at " + oneLine(trimRunes(s.Witness, 60))
		}
		fmt.Fprintf(w, "  surviving: line %d, %s (%s)%s\n", s.Line, messages.Printable(oneLine(s.Description)), s.Operator, messages.Printable(where))
	}
}
