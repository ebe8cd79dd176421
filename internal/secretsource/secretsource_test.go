package secretsource_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/secretsource"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "DB_PASSWORD"), []byte("s3cr3t-from-file\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "SHORT"), []byte("ab"), 0o600)
	os.Symlink("/etc/passwd", filepath.Join(dir, "LINKED"))
	env := map[string]string{"AUTOCODER_SECRET_API_TOKEN": "tok-from-env", "OPENAI_API_KEY": "sk-worker-own"}
	src := secretsource.New(dir, []byte("k"))
	src.Getenv = func(k string) string { return env[k] }

	got, err := src.Resolve([]string{"DB_PASSWORD", "API_TOKEN"})
	if err != nil || got["DB_PASSWORD"] != "s3cr3t-from-file" || got["API_TOKEN"] != "tok-from-env" {
		t.Fatalf("Resolve = %v, %v", got, err)
	}
	for name, want := range map[string]string{
		"MISSING":        "has no the file MISSING",
		"OPENAI_API_KEY": "AUTOCODER_SECRET_OPENAI_API_KEY", // the worker's own settings are no source
		"SHORT":          "must be 4 bytes",
		"LINKED":         "not a regular file",
		"LD_PRELOAD":     "would change how",
	} {
		_, err := src.Resolve([]string{name})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Resolve(%s) = %v, want an error with %q", name, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "sk-worker-own") {
			t.Errorf("an error carries a value: %v", err)
		}
	}
	if _, err := src.Resolve([]string{"MISSING"}); !errors.Is(err, secretsource.ErrNotFound) {
		t.Errorf("a missing secret is not ErrNotFound: %v", err)
	}
}

func TestKeyPart(t *testing.T) {
	t.Parallel()
	a := secretsource.New("", []byte("shared"))
	b := secretsource.New("", []byte("shared"))
	v1 := map[string]string{"A": "one-value", "B": "two-value"}
	if !bytes.Equal(a.KeyPart(v1), b.KeyPart(v1)) {
		t.Error("two workers with one key hash alike")
	}
	rotated := map[string]string{"A": "one-value", "B": "new-value"}
	if bytes.Equal(a.KeyPart(v1), a.KeyPart(rotated)) {
		t.Error("a rotated secret keeps its key part")
	}
	if strings.Contains(string(a.KeyPart(v1)), "one-value") {
		t.Error("the key part holds a value")
	}
	if bytes.Equal(a.KeyPart(v1), secretsource.New("", []byte("other")).KeyPart(v1)) || bytes.Equal(secretsource.New("", nil).KeyPart(v1), secretsource.New("", nil).KeyPart(v1)) {
		t.Error("other keys hash alike")
	}
	if a.KeyPart(nil) != nil {
		t.Error("no secrets, yet a key part")
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	values := map[string]string{"PW": "hunter22", "LONG": "hunter22-and-more"}
	got := string(secretsource.Redact([]byte("a hunter22-and-more b hunter22 c"), values))
	if got != "a [secret LONG] b [secret PW] c" {
		t.Errorf("Redact = %q", got)
	}
	if secretsource.RedactString("nothing here", values) != "nothing here" {
		t.Error("text without secrets changed")
	}
}
