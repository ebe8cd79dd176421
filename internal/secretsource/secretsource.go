package secretsource

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Bounds of a secret's value.
const (
	MaxValueBytes = 64 << 10
	// MinValueBytes keeps a secret long enough to be told from ordinary
	// text when its value is cut out of what a run returns (Redact).
	MinValueBytes = 4
)

// EnvPrefix names the worker's environment variables that hold secrets:
// AUTOCODER_SECRET_DB_PASSWORD holds secret DB_PASSWORD. Only variables
// with this prefix are a source, so a job cannot name the worker's own
// settings (OPENAI_API_KEY) as a secret.
const EnvPrefix = "AUTOCODER_SECRET_"

// ErrNotFound is wrapped by Resolve for a secret the worker does not have.
var ErrNotFound = errors.New("secretsource: secret not found")

// Source is a sandbox worker's secrets: a directory of files, one per
// name, then its environment (EnvPrefix). Key keys the hash of values in
// the stage cache (KeyPart).
type Source struct {
	Dir    string              // "": no directory
	Getenv func(string) string // nil: os.Getenv
	key    []byte
}

// New returns a source; key keys KeyPart (a cache.Keyring's Derive, shared
// by the workers that share a cache). A nil key is a random one: hashes
// then match only within this process, so a cached result of a stage with
// secrets is reused by this worker alone.
func New(dir string, key []byte) *Source {
	if len(key) == 0 {
		key = make([]byte, 32)
		_, _ = rand.Read(key) // crypto/rand.Read never fails
	}
	return &Source{Dir: dir, key: append([]byte(nil), key...)}
}

// Resolve reads the values of names. A missing one is an error naming it
// and where it was looked for, never a value.
func (s *Source) Resolve(names []string) (map[string]string, error) {
	out := make(map[string]string, len(names))
	for _, name := range names {
		if msg := messages.CheckEnvName(name); msg != "" {
			return nil, fmt.Errorf("secret %s: %s", messages.QuoteName(name), msg)
		}
		v, err := s.value(name)
		if err != nil {
			return nil, err
		}
		out[name] = v
	}
	return out, nil
}

func (s *Source) value(name string) (string, error) {
	if s.Dir != "" {
		v, err := readSecret(filepath.Join(s.Dir, name))
		switch {
		case err == nil:
			return s.check(name, v)
		case !errors.Is(err, os.ErrNotExist):
			return "", fmt.Errorf("secret %s: %w", name, err)
		}
	}
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if v := getenv(EnvPrefix + name); v != "" {
		return s.check(name, v)
	}
	where := EnvPrefix + name + " in its environment"
	if s.Dir != "" {
		where = "the file " + name + " of AUTOCODER_SECRETS_DIR or " + where
	}
	return "", fmt.Errorf("secret %s: %w: this sandbox worker has no %s", name, ErrNotFound, where)
}

func (s *Source) check(name, v string) (string, error) {
	if len(v) < MinValueBytes || len(v) > MaxValueBytes || strings.ContainsRune(v, 0) {
		return "", fmt.Errorf("secret %s: its value must be %d bytes to %s without NUL bytes", name, MinValueBytes, messages.FormatBytes(MaxValueBytes))
	}
	return v, nil
}

// readSecret reads a secret file (a regular file, not a link, at most
// MaxValueBytes), without its final newline.
func readSecret(path string) (string, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", filepath.Base(path))
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxValueBytes+2))
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"), nil
}

// KeyPart is what a stage's cache key gets for its secrets: an HMAC of
// the names and values under the source's key, so a rotated secret gives
// another key and no value is ever stored or sent.
func (s *Source) KeyPart(values map[string]string) []byte {
	if len(values) == 0 {
		return nil
	}
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	sort.Strings(names)
	m := hmac.New(sha256.New, s.key)
	for _, n := range names {
		fmt.Fprintf(m, "%d:%s=%d:%s\n", len(n), n, len(values[n]), values[n])
	}
	return []byte("secrets:" + hex.EncodeToString(m.Sum(nil)))
}

// Redact cuts every secret value out of b, so nothing a run returns (its
// output, its files, its outputs) carries one: each is replaced by
// [secret NAME]. Longer values go first, so one inside another is not
// left half cut.
func Redact(b []byte, values map[string]string) []byte {
	if len(values) == 0 || len(b) == 0 {
		return b
	}
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return len(values[names[i]]) > len(values[names[j]]) })
	for _, n := range names {
		if v := values[n]; v != "" && bytes.Contains(b, []byte(v)) {
			b = bytes.ReplaceAll(b, []byte(v), []byte("[secret "+n+"]"))
		}
	}
	return b
}

// RedactString is Redact for a string.
func RedactString(s string, values map[string]string) string {
	return string(Redact([]byte(s), values))
}
