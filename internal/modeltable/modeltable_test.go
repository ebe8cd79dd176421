package modeltable_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/modeltable"
	"github.com/autocoder/autocoder/pkg/messages"
)

func write(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoad(t *testing.T) {
	key := write(t, "key", "sk-file-key\n")
	t.Setenv("TEST_MODEL_KEY", "sk-env-key")
	p := write(t, "models.yaml", fmt.Sprintf(`default: big
currency: USD
models:
  - name: big
    api_key_file: %s
    input_price: 2
    output_price: 8
    context_tokens: 128000
  - name: small
    remote: qwen2.5-coder:7b
    base_url: http://127.0.0.1:11434/v1
    api_key_env: TEST_MODEL_KEY
    input_price: 0.1
  - name: free
`, key))
	tb, err := modeltable.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	big, ok := tb.Lookup("")
	if !ok || big.Name != "big" || big.Key != "sk-file-key" || big.RemoteName() != "big" {
		t.Fatalf("default model %+v", big)
	}
	small, _ := tb.Lookup("small")
	if small.Key != "sk-env-key" || small.RemoteName() != "qwen2.5-coder:7b" {
		t.Errorf("small %+v", small)
	}
	if got := big.Cost(messages.Usage{InputTokens: 1000, OutputTokens: 500}); got != 0.006 {
		t.Errorf("cost %v, want 0.006", got)
	}
	if _, ok := tb.Lookup("nope"); ok {
		t.Error("an unknown model was found")
	}
	// The keys are never written out.
	b, _ := json.Marshal(tb)
	for _, s := range []string{string(b), big.String(), small.String()} {
		if strings.Contains(s, "sk-") {
			t.Errorf("a key leaked: %s", s)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct{ body, want string }{
		{"default: a\n", "at least one model"},
		{"default: a\nmodels: [{name: a, input_prise: 1}]\n", "input_prise"},
		{"default: b\nmodels: [{name: a}]\n", `"b" is not in models`},
		{"models: [{name: a}]\n", "default:"},
		{"default: a\nmodels: [{name: a}, {name: a}]\n", "used twice"},
		{"default: a\nmodels: [{name: 'a b'}]\n", "must be a model name"},
		{"default: a\nmodels: [{name: a, output_price: -1}]\n", "output_price"},
		{"default: a\nmodels: [{name: a, base_url: 'ftp://x'}]\n", "base_url"},
		{"default: a\nmodels: [{name: a, base_url: 'https://u:p@x/v1'}]\n", "without credentials"},
		{"default: a\nmodels: [{name: a, api_key_file: f, api_key_env: E}]\n", "not both"},
		{"[1, 2]", "cannot unmarshal"},
	}
	for _, tt := range tests {
		if _, err := modeltable.Parse([]byte(tt.body)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", tt.body, err, tt.want)
		}
	}
}

func TestLoadKeys(t *testing.T) {
	empty := write(t, "empty", "\n")
	for body, want := range map[string]string{
		"default: a\nmodels: [{name: a, api_key_file: " + empty + "}]\n":           "is empty",
		"default: a\nmodels: [{name: a, api_key_file: /nonexistent/key}]\n":        "no such file",
		"default: a\nmodels: [{name: a, api_key_env: AUTOCODER_TEST_UNSET_KEY}]\n": "is not set",
	} {
		if _, err := modeltable.Load(write(t, "m.yaml", body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load(%q) = %v, want %q", body, err, want)
		}
	}
	if _, err := modeltable.Load(filepath.Join(t.TempDir(), "none.yaml")); err == nil {
		t.Error("a missing file loaded")
	}
}

func TestSingle(t *testing.T) {
	t.Parallel()
	tb := modeltable.Single("", "http://127.0.0.1:1/v1", "k")
	m, ok := tb.Lookup("")
	if !ok || m.Name != messages.DefaultModel || m.Key != "k" || tb.Validate() != nil {
		t.Errorf("Single: %+v %v", m, tb.Validate())
	}
	// Any other model the endpoint serves may be named, unpriced.
	other, ok := tb.Lookup("llama3:8b")
	if !ok || other.RemoteName() != "llama3:8b" || other.BaseURL != "http://127.0.0.1:1/v1" || other.Key != "k" || other.InputPrice != 0 {
		t.Errorf("Single, another model: %+v %v", other, ok)
	}
	if _, ok := tb.Lookup("bad name"); ok {
		t.Error("an invalid name was found")
	}
}
