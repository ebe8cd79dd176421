package prompts

import (
	"fmt"
	"strings"

	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/pkg/messages"
)

// DocChunk is a piece of the job's documentation (JobSpec.Context) put
// into a prompt.
type DocChunk struct {
	File    string
	Index   int
	Heading string
	Text    string
}

// WithDocs puts documentation chunks into a stage's conversation, as a user
// message of data blocks before the task's own message. retrieved says the
// chunks are excerpts chosen for the call, not the whole documentation.
// No chunks: msgs unchanged.
func WithDocs(msgs []messages.ChatMessage, chunks []DocChunk, retrieved bool) []messages.ChatMessage {
	if len(chunks) == 0 || len(msgs) == 0 {
		return msgs
	}
	var b strings.Builder
	b.WriteString("## Documentation\n\n")
	if retrieved {
		b.WriteString("The job comes with documentation; these are the excerpts most relevant to this step, best match first. Use the APIs, formats and rules they describe exactly as written.\n\n")
	} else {
		b.WriteString("The job comes with this documentation. Use the APIs, formats and rules it describes exactly as written.\n\n")
	}
	for _, c := range chunks {
		label := fmt.Sprintf("%s, part %d", c.File, c.Index)
		if c.Heading != "" {
			label += " (" + c.Heading + ")"
		}
		b.WriteString(data(label, "markdown", c.Text))
		b.WriteString("\n")
	}
	out := make([]messages.ChatMessage, 0, len(msgs)+1)
	out = append(out, msgs[:len(msgs)-1]...)
	out = append(out, messages.ChatMessage{Role: "user", Content: b.String()}, msgs[len(msgs)-1])
	return out
}

// reflectRun is the fix stage's conversation for the code runner
// (options.validate: run, so no tests): the script was run and failed, and
// the model reflects on the error and returns new code.
func reflectRun(in messages.FixInput) []messages.ChatMessage {
	system := preamble + `

Your job now: the script solution.py was run in the sandbox on the samples and it failed (a non-zero exit, a timeout, or a declared output it did not write or wrote in the wrong form). There are no tests: the run itself is the check. Reflect on the error: find its cause in the code and the documentation, then return solution.py fixed so that it runs to completion, exits with code 0 and writes every declared output. Keep what works and follow the script protocol.

` + scriptProtocol(in.Task) + `
` + solutionFields(in.Packages)

	var b strings.Builder
	renderTask(&b, in.Task)
	renderPlan(&b, in.Plan)
	b.WriteString("\n## Current code\n\n")
	renderCode(&b, protocol.SolutionFile+" (failed when run)", in.Code)
	b.WriteString("\n## The failed run\n\n")
	renderFailures(&b, "What the run did and what it must do", in.Failures)
	if in.Escalation > 0 {
		b.WriteString("\n## Earlier fixes did not change the code\n\nThe previous reply left the code as it was. Change what makes the run fail this time.\n")
	}
	b.WriteString("\nReturn the complete fixed solution.py now.\n")
	return chat(system, b.String())
}
