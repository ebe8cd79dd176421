package submit

import (
	"fmt"
	"io"

	"github.com/autocoder/autocoder/pkg/messages"
)

// successLine is the summary's first line for a job that succeeded: what
// its check was.
func successLine(r *messages.Result) string {
	if r.Spec != nil && r.Spec.Options.ValidatesByRun() {
		return "SUCCESS: the generated script ran on the samples and wrote its outputs (validate: run)"
	}
	return "SUCCESS: the generated script passed its tests"
}

// printContextUsed lists, per model stage, the documentation chunks its
// prompt held (the result's context_used), the best match first.
func printContextUsed(w io.Writer, r *messages.Result) {
	if len(r.ContextUsed) == 0 {
		return
	}
	fmt.Fprintln(w, "documentation used:")
	for _, c := range r.ContextUsed {
		how := "all of it"
		if c.Retrieved {
			how = "retrieved"
		}
		line := fmt.Sprintf("  %-6s iteration %d  %d chunk(s), %s", c.Stage, c.Iteration, len(c.Chunks), how)
		if c.Retrieved && len(c.Chunks) > 0 {
			best := c.Chunks[0]
			line += fmt.Sprintf("; best %s part %d (%s), score %.2f", best.File, best.Index, best.Heading, best.Score)
		}
		fmt.Fprintln(w, messages.Printable(line))
	}
}
