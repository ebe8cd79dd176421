package submit

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/config"
)

// TestCodeModeUsageErrors: bad code-mode invocations exit 2 with one line
// naming the problem, before anything connects.
func TestCodeModeUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no message", []string{"codemode", "--tool", "x"}, "give the message as one argument (got 0)"},
		{"two messages", []string{"codemode", "a", "b"}, "give the message as one argument (got 2)"},
		{"bad tool name", []string{"codemode", "hi", "--tool", "no-such"}, `tools[0]: "no-such" is not a tool name`},
		{"turns and retries", []string{"codemode", "hi", "--max-turns", "3", "--max-retries", "2"}, "max_retries: is for single-shot jobs"},
		{"missing skill file", []string{"codemode", "hi", "--skill-file", "/nonexistent/skill.md"}, "--skill-file /nonexistent/skill.md"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			code := Run(context.Background(), tt.args, config.FromEnv(), IO{Stdout: &out, Stderr: &errb})
			if code != ExitUsage || !strings.Contains(errb.String(), tt.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errb.String(), ExitUsage, tt.want)
			}
		})
	}
}

// TestCodeModeSpecFromFlags: the flags, before and after the message, make
// the job.
func TestCodeModeSpecFromFlags(t *testing.T) {
	t.Parallel()
	var f codeModeFlags
	in := &invocation{name: "submit codemode", io: IO{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}}
	fs := in.flagSet()
	f.register(fs)
	pos, err := parseInterleaved(fs, []string{"--tool", "a", "What is up?", "--tool", "b", "--max-turns", "4", "--skill", "Be brief."})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := f.spec(pos)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Message != "What is up?" || strings.Join(spec.Tools, ",") != "a,b" || spec.MaxTurns != 4 || spec.Skills[0] != "Be brief." {
		t.Fatalf("spec %+v", spec.CodeModeSpec)
	}
}
