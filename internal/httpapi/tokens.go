package httpapi

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Scope is what a bearer token may do.
type Scope string

const (
	// ScopeRead reads jobs, results, progress events and /metrics.
	ScopeRead Scope = "read"
	// ScopeSubmit is for the write endpoints: cancelling jobs
	// (POST /v1/jobs/{id}/cancel), and submitting them.
	ScopeSubmit Scope = "submit"
)

// grants is what each scope named in a tokens file lets its token do. A
// submitter follows the jobs it submits, so submit includes read; read
// never includes submit.
var grants = map[Scope][]Scope{
	ScopeRead:   {ScopeRead},
	ScopeSubmit: {ScopeSubmit, ScopeRead},
}

// minTokenLen keeps guessable tokens out of a tokens file: 16 characters of
// `openssl rand -hex 16` are 64 bits already.
const minTokenLen = 16

// Tokens are the bearer tokens an API accepts, kept as SHA-256 hashes so
// that a memory dump or a stray %v does not show them.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	name   string
	hash   [sha256.Size]byte
	scopes []Scope
}

// LoadTokens reads a tokens file (AUTOCODER_HTTP_TOKENS_FILE).
func LoadTokens(path string) (*Tokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("http tokens: %w", err)
	}
	defer f.Close()
	t, err := ParseTokens(f)
	if err != nil {
		return nil, fmt.Errorf("http tokens %s: %w", path, err)
	}
	return t, nil
}

// ParseTokens reads tokens, one a line: "scope token" or
// "name:scope:token", where scope is read, submit or both comma separated
// ("read,submit"). Blank lines and lines starting with # are skipped.
// Errors name the line, never the token.
func ParseTokens(r io.Reader) (*Tokens, error) {
	t := &Tokens{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		e, err := parseTokenLine(line, n)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if _, dup := t.lookup(e.hash); dup {
			return nil, fmt.Errorf("line %d: the same token is listed twice", n)
		}
		t.entries = append(t.entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(t.entries) == 0 {
		return nil, errors.New(`no tokens: write lines "read <token>" or "<name>:read:<token>"`)
	}
	return t, nil
}

func parseTokenLine(line string, n int) (tokenEntry, error) {
	name, scopes, token := fmt.Sprintf("line %d", n), "", ""
	if f := strings.Fields(line); len(f) == 2 {
		scopes, token = f[0], f[1]
	} else if parts := strings.SplitN(line, ":", 3); len(f) == 1 && len(parts) == 3 {
		name, scopes, token = parts[0], parts[1], parts[2]
	} else {
		return tokenEntry{}, errors.New(`want "scope token" or "name:scope:token"`)
	}
	if len(token) < minTokenLen {
		return tokenEntry{}, fmt.Errorf("token shorter than %d characters", minTokenLen)
	}
	e := tokenEntry{name: name, hash: sha256.Sum256([]byte(token))}
	for _, s := range strings.Split(scopes, ",") {
		g, ok := grants[Scope(s)]
		if !ok {
			return tokenEntry{}, fmt.Errorf("scope %q is not read or submit", s)
		}
		e.scopes = append(e.scopes, g...)
	}
	return e, nil
}

// Check reports the name of token's entry and whether it grants scope.
// Every entry is compared, in constant time, so the time taken says nothing
// about which one matched or how much of a guess was right.
func (t *Tokens) Check(token string, scope Scope) (name string, known, granted bool) {
	if t == nil {
		return "", false, false
	}
	e, ok := t.lookup(sha256.Sum256([]byte(token)))
	if !ok {
		return "", false, false
	}
	return e.name, true, slices.Contains(e.scopes, scope)
}

func (t *Tokens) lookup(h [sha256.Size]byte) (tokenEntry, bool) {
	var found tokenEntry
	match := 0
	for _, e := range t.entries {
		if subtle.ConstantTimeCompare(h[:], e.hash[:]) == 1 {
			found, match = e, 1
		}
	}
	return found, match == 1
}
