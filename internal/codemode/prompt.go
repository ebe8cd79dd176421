package codemode

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/pkg/messages"
)

// PromptConfig is what the system prompt of a code-mode conversation is
// made of. The job kind's turn stage and Session build it the same way.
type PromptConfig struct {
	// Prefix goes first (the job's system_prompt_prefix).
	Prefix string
	// Tools is the JSON of Registry.ToolDescriptions.
	Tools json.RawMessage
	// Skills are texts the model should know (how-tos, conventions).
	Skills []string
	// MultiTurn selects the instructions: turns with observations, or
	// one program whose value is the answer.
	MultiTurn bool
	// Starlark selects Starlark's dialect rules; otherwise the program is
	// Python (PythonRules).
	Starlark bool
}

// SystemPrompt returns the system message: the prefix, the task format,
// the dialect's rules, the tools and the skills.
func SystemPrompt(c PromptConfig) string {
	var b strings.Builder
	if p := strings.TrimSpace(c.Prefix); p != "" {
		b.WriteString(p + "\n\n")
	}
	if c.MultiTurn {
		b.WriteString(multiTurnInstructions)
	} else {
		b.WriteString(singleShotInstructions)
	}
	b.WriteString("\n")
	if c.Starlark {
		b.WriteString(DialectRules())
	} else {
		b.WriteString(PythonRules())
	}
	b.WriteString("\nThe tools, as JSON (name, doc, params with type and whether required):\n")
	tools := strings.TrimSpace(string(c.Tools))
	if tools == "" {
		tools = "[]"
	}
	b.WriteString(tools + "\n")
	for i, s := range c.Skills {
		if s = strings.TrimSpace(s); s != "" {
			fmt.Fprintf(&b, "\nSkill %d:\n%s\n", i+1, s)
		}
	}
	return b.String()
}

const multiTurnInstructions = `You answer the user's request by running programs that call tools.
Each reply holds at most one program, in a fenced code block (` + "```python" + ` ... ` + "```" + `).
The program runs, and the value of its last expression (with anything it
printed) comes back to you as the observation. Use the observations to
decide what to do next. When you know the answer, reply with the answer in
plain text and no code block: a reply without code is the final answer.
`

const singleShotInstructions = `You answer the user's request with one program that calls tools.
Reply with a short sentence saying what the program does, then the program
in one fenced code block (` + "```python" + ` ... ` + "```" + `). The value of its last
expression is the answer. If it fails, you will see the error and write the
program again.
`

// fenceRe matches a fenced code block; the language tag is optional. Its
// closing fence is on a line of its own, as Markdown has it: a program
// that prints "```json" is not cut there.
var fenceRe = regexp.MustCompile("(?s)```[A-Za-z0-9_+-]*[ \t]*\n(.*?)\n[ \t]*```[ \t]*(?:\n|$)")

// openFenceRe finds a code block's opening fence at the start of a line.
var openFenceRe = regexp.MustCompile("(?m)^[ \t]*```")

// Cut reports whether a reply that holds no complete program was cut
// short rather than meant: the model stopped at its token limit (finish
// reason "length"), said nothing, or opened a code block it never
// closed. Such a reply is neither an answer nor a program: it is asked
// for again (CutFeedback). A reply whose program is whole runs, whatever
// was cut after it.
func Cut(reply, finishReason string) bool {
	if _, _, ok := ExtractCode(reply); ok {
		return false
	}
	return finishReason == "length" || strings.TrimSpace(reply) == "" || openFenceRe.MatchString(reply)
}

// ExtractCode returns the program in a model reply (the first fenced code
// block) and the reply's prose around it. ok is false when the reply has
// no code block, which in a multi-turn conversation is the final answer.
func ExtractCode(reply string) (code, prose string, ok bool) {
	loc := fenceRe.FindStringSubmatchIndex(reply)
	if loc == nil {
		return "", strings.TrimSpace(reply), false
	}
	code = reply[loc[2]:loc[3]]
	prose = strings.TrimSpace(reply[:loc[0]] + "\n" + reply[loc[1]:])
	return code, prose, strings.TrimSpace(code) != ""
}

// DefaultObservationBytes is the default budget of an observation.
const DefaultObservationBytes = 8 << 10

// Observation is what the model sees of a run: what the program printed,
// then its value as JSON, or its error; cut to budget bytes (default
// DefaultObservationBytes) with a note saying how much was cut.
func Observation(res Result, runErr error, budget int) string {
	if budget <= 0 {
		budget = DefaultObservationBytes
	}
	var b strings.Builder
	if res.Output != "" {
		b.WriteString("Printed:\n" + res.Output)
		if !strings.HasSuffix(res.Output, "\n") {
			b.WriteString("\n")
		}
	}
	if runErr != nil {
		b.WriteString(ErrorText(runErr))
	} else {
		v, err := json.Marshal(res.Value)
		if err != nil {
			v = fmt.Appendf(nil, "%v", res.Value)
		}
		b.WriteString("Value: " + string(v))
	}
	return Truncate(b.String(), budget)
}

// ErrorText describes a failed program for the model: its kind, place
// and message.
func ErrorText(err error) string {
	var e *Error
	if !errors.As(err, &e) {
		return "Error: " + err.Error()
	}
	s := fmt.Sprintf("Error (%s): %s", e.Kind, e.Error())
	if e.Backtrace != "" {
		s += "\n" + e.Backtrace
	}
	return s
}

// Truncate cuts s to at most budget bytes (on a UTF-8 boundary) and says
// so in a note at the end, so the model knows it saw only a part.
func Truncate(s string, budget int) string {
	if len(s) <= budget {
		return s
	}
	const noteRoom = 120 // the note below, with both numbers
	keep := max(budget-noteRoom, 0)
	for keep > 0 && keep < len(s) && !utf8Start(s[keep]) {
		keep--
	}
	note := fmt.Sprintf("\n[observation truncated: showing %d of %d bytes; return a smaller value, e.g. a summary or a slice]", keep, len(s))
	return s[:keep] + note
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// NoCodeFeedback is what the model is told when a single-shot reply has
// no program.
const NoCodeFeedback = "Your reply has no code block. Reply with the program in one fenced code block."

// CutFeedback is what the model is told of a reply that was cut short
// (Cut).
func CutFeedback(multiTurn bool) string {
	if multiTurn {
		return "Your reply was cut off before it ended (or was empty). Reply again, shorter: one program in a fenced code block, or the answer in plain text."
	}
	return "Your reply was cut off before it ended (or was empty). Reply again, shorter: the program in one fenced code block."
}

// RetryFeedback is the message that gives a failed program's error back
// to the model.
func RetryFeedback(observation string) string {
	return "The program failed:\n" + observation + "\nFix it and reply with the whole corrected program in one code block."
}

// Conversation is the request to the model: the system prompt, the
// history, the message, then each step's reply and what the model was
// told of it (the observation in a multi-turn conversation, the error or
// the missing code otherwise). Session and the job's turn stage both ask
// with it.
func Conversation(system string, history []messages.ChatMessage, message string, steps []messages.CodeModeStep, multiTurn bool) []llm.ChatMessage {
	conv := make([]llm.ChatMessage, 0, len(history)+2+2*len(steps))
	conv = append(conv, llm.ChatMessage{Role: "system", Content: system})
	for _, m := range history {
		conv = append(conv, llm.ChatMessage{Role: m.Role, Content: m.Content})
	}
	conv = append(conv, llm.ChatMessage{Role: "user", Content: message})
	for _, st := range steps {
		conv = append(conv, llm.ChatMessage{Role: "assistant", Content: st.Reply})
		var told string
		switch {
		case st.Cut:
			told = CutFeedback(multiTurn)
		case st.NoCode:
			told = NoCodeFeedback
		case multiTurn:
			told = "Observation:\n" + st.Observation
		default:
			told = RetryFeedback(st.Observation)
		}
		conv = append(conv, llm.ChatMessage{Role: "user", Content: told})
	}
	return conv
}
