package prompts

import (
	"fmt"
	"strings"

	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/internal/trim"
	"github.com/autocoder/autocoder/pkg/messages"
)

// SurvivorsHeading heads the surviving mutants in StrengthenTests' prompt.
const SurvivorsHeading = "## Surviving mutants"

// survivorBudget bounds one survivor's diff in the prompt.
const survivorBudget = 2 << 10

// StrengthenTests builds the conversation that asks for stronger tests
// (reply: llm.TestsSchema): the tests pass, but small faults in the code
// (mutants) pass them too. The model sees the survivors and, for each, an
// input on which it differs from the code, and writes the test file again
// with tests that fail on each survivor. The expected values come from the
// task, not from the code: where the code is wrong at that input, a new
// test fails on it, and the loop's diagnosis repairs the code.
func StrengthenTests(in messages.StrengthenTestsInput) []messages.ChatMessage {
	system := preamble + `

Your job now: make test_solution.py stronger. Its tests pass on solution.py, but so do the mutants below: copies of solution.py with one small fault each (an operator, a comparison, a boundary or a constant changed). A test suite that lets a fault pass would let a real bug pass. Add tests that fail on each mutant, and keep every existing test.

For each mutant, look at the input given where it and solution.py differ, and at the boundary the change touches (a < that became <=, a range one longer, a constant one away). Write a test at that input or boundary whose expected value you work out from the task by hand, never by running or reading solution.py: solution.py itself may be wrong there, and then the new test must fail on it. A mutant that is truly the same function as solution.py cannot be killed: leave it.

` + scriptProtocol(in.Task) + `
` + testProtocol(in.Task) + `
Reply fields:
- code: the complete new contents of test_solution.py as plain source, without Markdown fences: every existing test, then the new ones.`

	var b strings.Builder
	renderTask(&b, in.Task)
	renderDataContext(&b, in.DataContext)
	renderPlan(&b, in.Plan)
	b.WriteString("\n## Code under test\n\n")
	renderCode(&b, protocol.SolutionFile, in.Code)
	b.WriteString("\n")
	renderCode(&b, protocol.TestFile+" (passing; to strengthen)", in.Tests)
	renderSurvivors(&b, in.Strength)
	b.WriteString("\nWrite the stronger test_solution.py now.\n")
	return chat(system, b.String())
}

func renderSurvivors(b *strings.Builder, ts messages.TestStrength) {
	fmt.Fprintf(b, "\n%s\n\nOf %d mutants the tests killed %d; %d survived", SurvivorsHeading, ts.Judged()+ts.Equivalent, ts.Killed, ts.Survived)
	if ts.Equivalent > 0 {
		fmt.Fprintf(b, " and %d more behave like solution.py on every input tried (left out)", ts.Equivalent)
	}
	b.WriteString(".\n")
	for i, s := range ts.Survivors {
		fmt.Fprintf(b, "\n### Mutant %d: line %d, %s (%s)\n\n", i+1, s.Line, s.Description, s.Operator)
		b.WriteString(data("Change", "diff", trim.Middle(s.Diff, survivorBudget)))
		if s.Witness != "" {
			where := "one of the tests' own calls: the tests call it but do not check the result closely enough"
			if s.Near {
				where = "next to a call the tests make: the tests do not reach this input"
			}
			fmt.Fprintf(b, "It differs from solution.py at this call, %s.\n", where)
			b.WriteString(data("Call", "python", s.Witness))
		} else {
			b.WriteString("No input was found where it differs; look at the boundary the change touches.\n")
		}
	}
	if len(ts.Survivors) < ts.Survived {
		fmt.Fprintf(b, "\n(%d more survivors are not shown.)\n", ts.Survived-len(ts.Survivors))
	}
	if strings.TrimSpace(ts.Error) != "" {
		b.WriteString("\nNote: " + trim.Middle(ts.Error, fieldBudget) + "\n")
	}
}
