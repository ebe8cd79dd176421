package submit

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/pkg/messages"
)

// The human view of a result object, what `submit status` and `submit
// result` print without --json: where the job is, its stages with their
// own durations, its outputs, and (for result) its script. The conversation
// history, most of the JSON, is left to --json.

// maxViewNotes bounds the notes the view shows (the most recent).
const maxViewNotes = 3

// printView writes the human view of r; withCode adds the script, and
// running are the stages in flight of a running job.
func printView(w io.Writer, r *messages.Result, withCode bool, running []client.RunningStage) {
	printHeadline(w, r)
	if r.Spec != nil && r.Spec.Prompt != "" {
		fmt.Fprintf(w, "task: %s\n", messages.Printable(oneLine(trimRunes(r.Spec.Prompt, 100))))
	}
	fmt.Fprintf(w, "%d attempt(s), %d LLM call(s), %d cache hit(s), %d+%d tokens\n",
		r.Attempts, r.LLMCalls, r.CacheHits, r.TotalInputTokens, r.TotalOutputTokens)
	printStages(w, r.Stages)
	printRunning(w, running, r.FinishedAt)
	notes := r.Notes
	if len(notes) > maxViewNotes {
		notes = notes[len(notes)-maxViewNotes:]
	}
	for _, n := range notes {
		fmt.Fprintf(w, "note: %s\n", messages.Printable(oneLine(n)))
	}
	printOutputs(w, r.Outputs)
	printStrength(w, r.TestStrength) // strength.go
	switch {
	case withCode && r.Solution != nil:
		fmt.Fprintf(w, "\n# %s\n%s\n", protocol.SolutionFile, messages.Printable(strings.TrimRight(r.Solution.Code, "\n")))
	case r.Solution != nil:
		fmt.Fprintf(w, "the script: submit result %s (--out DIR saves it)\n", r.JobID)
	}
}

// printHeadline is the first line: the job and how it stands.
func printHeadline(w io.Writer, r *messages.Result) {
	took := ""
	if r.FinishedAt != nil && !r.SubmittedAt.IsZero() {
		took = " after " + r.FinishedAt.Sub(r.SubmittedAt).Round(100*time.Millisecond).String()
	}
	switch {
	case r.Status == messages.StatusRunning:
		fmt.Fprintf(w, "job %s: running since %s\n", r.JobID, r.SubmittedAt.Local().Format(time.DateTime))
	case r.Cancelled != nil:
		c := r.Cancelled
		why := ""
		if c.Reason != "" {
			why = ": " + messages.Printable(oneLine(c.Reason))
		}
		fmt.Fprintf(w, "job %s: CANCELLED by %s at %s%s%s\n", r.JobID, messages.Printable(c.By), c.At.Local().Format(time.DateTime), took, why)
	case r.Success:
		fmt.Fprintf(w, "job %s: SUCCEEDED%s: the generated script passed its tests\n", r.JobID, took)
	default:
		fmt.Fprintf(w, "job %s: %s%s: %s\n", r.JobID, strings.ToUpper(string(r.Status)), took, messages.Printable(oneLine(r.Error)))
	}
}

// printStages lists the stages done, each with its own duration.
func printStages(w io.Writer, stages []messages.StageRecord) {
	if len(stages) == 0 {
		return
	}
	fmt.Fprintln(w, "stages:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range stages {
		cached := ""
		if s.Cached {
			cached = " (cached)"
		}
		fmt.Fprintf(tw, "  %s\titeration %d\t%s\t%s%s\n", messages.QuoteName(string(s.Name)), s.Iteration,
			(time.Duration(s.DurationMS) * time.Millisecond).String(), messages.Printable(oneLine(s.Outcome)), cached)
	}
	tw.Flush()
}

// printRunning lists the stages in flight, each with how long it has run.
func printRunning(w io.Writer, running []client.RunningStage, finished *time.Time) {
	if len(running) == 0 || finished != nil {
		return
	}
	fmt.Fprintln(w, "running now:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range running {
		fmt.Fprintf(tw, "  %s\titeration %d\tfor %s\n", messages.QuoteName(string(s.Stage)), s.Iteration,
			time.Since(s.Since).Round(time.Second))
	}
	tw.Flush()
}

// printOutputs lists the typed outputs, by name.
func printOutputs(w io.Writer, outputs map[string]any) {
	if len(outputs) == 0 {
		return
	}
	fmt.Fprintln(w, "outputs:")
	keys := make([]string, 0, len(outputs))
	for k := range outputs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b, _ := json.Marshal(outputs[k])
		fmt.Fprintf(w, "  %s = %s\n", messages.QuoteName(k), messages.Printable(string(b)))
	}
}
