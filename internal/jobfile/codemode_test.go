package jobfile

import (
	"testing"

	"github.com/autocoder/autocoder/pkg/messages"
)

// TestDecodeCodeModeJob: a mode: codemode job file (Contract 8) reads into
// the spec's code-mode fields.
func TestDecodeCodeModeJob(t *testing.T) {
	t.Parallel()
	spec, err := Decode([]byte(`mode: codemode
message: Which SKUs are low on stock?
history:
  - {role: user, content: We restock at 20 units.}
  - {role: assistant, content: Noted.}
tools: [stock_level, price]
skills: ["Money is in euros."]
max_turns: 4
system_prompt_prefix: You are a stock assistant.
`))
	if err != nil {
		t.Fatal(err)
	}
	if spec.Mode != messages.ModeCodeMode || spec.Message != "Which SKUs are low on stock?" || len(spec.History) != 2 ||
		spec.Tools[1] != "price" || spec.MaxTurns != 4 || spec.SystemPromptPrefix != "You are a stock assistant." {
		t.Fatalf("spec %+v", spec.CodeModeSpec)
	}
	if _, err := Decode([]byte("mode: codemode\nmessage: x\nmax_turns: 99\n")); err == nil {
		t.Fatal("max_turns 99 accepted")
	}
}
