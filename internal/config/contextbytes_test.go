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
