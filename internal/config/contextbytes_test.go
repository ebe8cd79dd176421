package config

import (
	"flag"
	"strings"
	"testing"
)

// TestContextBytes: the documentation budget of one prompt comes from the
// environment or its flag as a quantity; a bad one names its setting.
func TestContextBytes(t *testing.T) {
	t.Setenv("AUTOCODER_CONTEXT_BYTES", "8Ki")
	c := FromEnv()
	if got, err := c.Bounds(); err != nil || got.ContextBytes != 8<<10 {
		t.Errorf("Bounds with AUTOCODER_CONTEXT_BYTES=8Ki = %+v, %v", got, err)
	}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	c.Register(fs)
	if err := fs.Parse([]string{"--context-bytes", "2Ki"}); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Bounds(); err != nil || got.ContextBytes != 2<<10 {
		t.Errorf("Bounds with --context-bytes 2Ki = %+v, %v", got, err)
	}
	for _, bad := range []Config{
		{ContextBytes: "12"},
		{ContextBytes: "200Ki"},                        // over half of the default 256Ki prompt
		{ContextBytes: "24Ki", MaxPromptBytes: "32Ki"}, // over half of the prompt set
	} {
		bad.StateDir, bad.LogLevel = t.TempDir(), "info"
		if err := bad.Validate(); err == nil || !strings.HasPrefix(err.Error(), "AUTOCODER_CONTEXT_BYTES") {
			t.Errorf("Validate with AUTOCODER_CONTEXT_BYTES %q = %v, want an error naming it", bad.ContextBytes, err)
		}
	}
}

// TestContextBytesWithinPrompt: the documentation budget leaves half of
// the prompt bound whichever of the two is set. A small prompt bound
// alone made the default 24Ki of documentation overflow every plan and
// fix; it now halves the budget, and a budget that holds no chunk is
// refused.
func TestContextBytesWithinPrompt(t *testing.T) {
	for _, tc := range []struct {
		prompt, context string
		want            int
	}{
		{"32Ki", "", 16 << 10}, // derived: half the prompt bound
		{"4Ki", "", 2 << 10},
		{"64Ki", "", 0}, // the default (24Ki) fits
		{"", "", 0},
		{"32Ki", "16Ki", 16 << 10},
	} {
		c := Config{MaxPromptBytes: tc.prompt, ContextBytes: tc.context}
		got, err := c.Bounds()
		if err != nil || got.ContextBytes != tc.want {
			t.Errorf("Bounds(prompt %q, context %q) = %+v, %v; want ContextBytes %d", tc.prompt, tc.context, got, err, tc.want)
		}
		if eff := cmpOr(got.ContextBytes, 24<<10); 2*eff > cmpOr(got.PromptBytes, 256<<10) {
			t.Errorf("prompt %q, context %q: %d bytes of documentation in a prompt bound of %+v", tc.prompt, tc.context, eff, got)
		}
	}
	if _, err := (&Config{ContextBytes: "1Ki"}).Bounds(); err == nil || !strings.Contains(err.Error(), "one documentation chunk") {
		t.Errorf("AUTOCODER_CONTEXT_BYTES=1Ki: %v, want it refused: no chunk fits", err)
	}
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}
