package evaluate

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Summary is the evaluation's figures over the finished problems.
type Summary struct {
	Problems int // in the set
	Done     int // finished (rows without Pending)
	// HiddenPassed counts the problems whose final script passes the
	// hidden tests: pass@1 is HiddenPassed / Judged() (Done less the
	// problems whose hidden tests could not run, HiddenErrors).
	HiddenPassed int
	Successes    int // jobs that said success
	FalseSuccess int // ... while the hidden tests fail
	Failures     int // jobs that did not (failed or errored)
	FalseFailure int // ... while the hidden tests pass
	Errored      int // jobs that ended on an infrastructure error
	HiddenErrors int // problems whose hidden tests eval could not run (its own sandbox failed)
	Iterations   int // sums, for the means
	LLMCalls     int
	Tokens       int
	CostUSD      float64
	WallSeconds  float64
	// Strength: the problems with a measured test strength, the sums of
	// their first and last scores, and the calls and tokens spent
	// strengthening tests.
	StrengthMeasured int
	StrengthInitial  float64
	StrengthFinal    float64
	StrengthCalls    int
	StrengthTokens   int
}

// Summarize sums the rows of the problems in order (the set's task IDs).
func Summarize(order []string, rows map[string]Row) Summary {
	s := Summary{Problems: len(order)}
	for _, id := range order {
		r, ok := rows[id]
		if !ok || r.Pending {
			continue
		}
		s.Done++
		s.add(r)
	}
	return s
}

func (s *Summary) add(r Row) {
	if r.Hidden == HiddenPassed {
		s.HiddenPassed++
	}
	if r.Success {
		s.Successes++
	} else {
		s.Failures++
	}
	if r.FalseSuccess() {
		s.FalseSuccess++
	}
	if r.FalseFailure() {
		s.FalseFailure++
	}
	if r.Status == messages.StatusErrored {
		s.Errored++
	}
	if r.Hidden == HiddenError {
		s.HiddenErrors++
	}
	s.Iterations += r.Iterations
	s.LLMCalls += r.LLMCalls
	s.Tokens += r.InputTokens + r.OutputTokens
	s.CostUSD += r.CostUSD
	s.WallSeconds += r.WallSeconds
	if r.Strength != nil {
		s.StrengthMeasured++
		s.StrengthInitial += r.Strength.Initial
		s.StrengthFinal += r.Strength.Score
		s.StrengthCalls += r.Strength.Calls
		s.StrengthTokens += r.Strength.Tokens
	}
}

// Judged is how many finished problems pass@1 is over: those whose hidden
// tests ran, or that had no script to run them on (a fail). A problem
// whose hidden tests eval could not run (HiddenErrors) is neither a pass
// nor a fail.
func (s Summary) Judged() int { return s.Done - s.HiddenErrors }

// PassAt1 is the share of the judged problems (Judged) whose final script
// passes the hidden tests.
func (s Summary) PassAt1() float64 { return ratio(s.HiddenPassed, s.Judged()) }

// FalseSuccessRate is the share of the jobs that said success whose script
// fails the hidden tests.
func (s Summary) FalseSuccessRate() float64 { return ratio(s.FalseSuccess, s.Successes) }

// FalseFailureRate is the share of the jobs that did not succeed whose
// script passes the hidden tests.
func (s Summary) FalseFailureRate() float64 { return ratio(s.FalseFailure, s.Failures) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func mean(sum float64, n int) float64 {
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// csvHeader are the columns of the CSV, one row per problem.
var csvHeader = []string{"task_id", "status", "success", "hidden", "false_success", "false_failure", "iterations",
	"llm_calls", "input_tokens", "output_tokens", "cost_usd", "wall_seconds", "test_strength", "test_strength_initial",
	"mutants", "killed", "survived", "equivalent", "strength_rounds", "strength_calls", "strength_tokens",
	"cache_hits", "job_id", "error"}

// WriteCSV writes the finished rows of the problems in order.
func WriteCSV(w io.Writer, order []string, rows map[string]Row) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	for _, id := range order {
		r, ok := rows[id]
		if !ok || r.Pending {
			continue
		}
		st := []string{"", "", "", "", "", "", "", "", ""}
		if s := r.Strength; s != nil {
			st = []string{f3(s.Score), f3(s.Initial), itoa(s.Mutants), itoa(s.Killed), itoa(s.Survived), itoa(s.Equivalent),
				itoa(s.Rounds), itoa(s.Calls), itoa(s.Tokens)}
		}
		rec := append([]string{r.TaskID, string(r.Status), strconv.FormatBool(r.Success), r.Hidden,
			strconv.FormatBool(r.FalseSuccess()), strconv.FormatBool(r.FalseFailure()), itoa(r.Iterations),
			itoa(r.LLMCalls), itoa(r.InputTokens), itoa(r.OutputTokens), strconv.FormatFloat(r.CostUSD, 'f', 6, 64),
			strconv.FormatFloat(r.WallSeconds, 'f', 1, 64)}, st...)
		rec = append(rec, itoa(r.CacheHits), r.JobID, oneLine(r.Error))
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteMarkdown writes the summary table, then a table of the problems.
func WriteMarkdown(w io.Writer, title string, order []string, rows map[string]Row) error {
	s := Summarize(order, rows)
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", title)
	b.WriteString("| measure | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| problems | %d of %d finished |\n", s.Done, s.Problems)
	fmt.Fprintf(&b, "| pass@1 on hidden tests | %s (%d of %d) |\n", pct(s.PassAt1()), s.HiddenPassed, s.Judged())
	fmt.Fprintf(&b, "| false success | %s (%d of %d successes) |\n", pct(s.FalseSuccessRate()), s.FalseSuccess, s.Successes)
	fmt.Fprintf(&b, "| false failure | %s (%d of %d failures) |\n", pct(s.FalseFailureRate()), s.FalseFailure, s.Failures)
	fmt.Fprintf(&b, "| errored jobs | %d |\n", s.Errored)
	fmt.Fprintf(&b, "| hidden tests not run (eval's sandbox failed) | %d |\n", s.HiddenErrors)
	fmt.Fprintf(&b, "| iterations per problem | %.2f |\n", mean(float64(s.Iterations), s.Done))
	fmt.Fprintf(&b, "| model calls per problem | %.2f |\n", mean(float64(s.LLMCalls), s.Done))
	fmt.Fprintf(&b, "| tokens per problem | %.0f |\n", mean(float64(s.Tokens), s.Done))
	fmt.Fprintf(&b, "| cost | $%.4f in all, $%.5f per problem |\n", s.CostUSD, mean(s.CostUSD, s.Done))
	fmt.Fprintf(&b, "| wall time per problem | %.1f s |\n", mean(s.WallSeconds, s.Done))
	if s.StrengthMeasured > 0 {
		fmt.Fprintf(&b, "| test strength (first → final) | %.3f → %.3f over %d problems |\n",
			mean(s.StrengthInitial, s.StrengthMeasured), mean(s.StrengthFinal, s.StrengthMeasured), s.StrengthMeasured)
		fmt.Fprintf(&b, "| strengthening cost | %d model calls, %d tokens |\n", s.StrengthCalls, s.StrengthTokens)
	}
	b.WriteString("\n| problem | status | success | hidden | iterations | calls | tokens | cost $ | wall s | strength |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, id := range order {
		r, ok := rows[id]
		if !ok || r.Pending {
			continue
		}
		hidden := r.Hidden
		if r.FalseSuccess() {
			hidden += " (false success)"
		} else if r.FalseFailure() {
			hidden += " (false failure)"
		}
		strength := "–"
		if r.Strength != nil {
			strength = fmt.Sprintf("%s → %s", f3(r.Strength.Initial), f3(r.Strength.Score))
		}
		fmt.Fprintf(&b, "| %s | %s | %t | %s | %d | %d | %d | %.5f | %.1f | %s |\n", mdCell(r.TaskID), r.Status, r.Success,
			hidden, r.Iterations, r.LLMCalls, r.InputTokens+r.OutputTokens, r.CostUSD, r.WallSeconds, strength)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func itoa(n int) string       { return strconv.Itoa(n) }
func f3(v float64) string     { return strconv.FormatFloat(v, 'f', 3, 64) }
func pct(v float64) string    { return strconv.FormatFloat(100*v, 'f', 1, 64) + "%" }
func mdCell(s string) string  { return strings.ReplaceAll(oneLine(s), "|", `\|`) }
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
