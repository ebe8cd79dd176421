package machine

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"sort"
	"strings"

	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/pkg/messages"
)

// signatureLen caps a normalised error: enough to tell failures apart.
const signatureLen = 200

var (
	hexAddrRe  = regexp.MustCompile(`0x[0-9a-fA-F]{4,}`)
	tmpPathRe  = regexp.MustCompile(`(?:/private)?(?:/tmp|/var/tmp|/var/folders)(?:/[^\s'":,()\[\]<>]*)*`)
	pyLineRe   = regexp.MustCompile(`(\.py)[:"',]+\s*(?:line\s+)?\d+`)
	lineWordRe = regexp.MustCompile(`\bline \d+`)
	pathRe     = regexp.MustCompile(`(?:/[A-Za-z0-9_.\-]+)+/?`)
	longNumRe  = regexp.MustCompile(`\d{9,}`)
	digitsRe   = regexp.MustCompile(`\d+`)
	letterRe   = regexp.MustCompile(`[A-Za-z]`)
	spaceRe    = regexp.MustCompile(`\s+`)
)

// normaliseError reduces an error message to what stays the same between
// runs of the same failure: memory addresses, temporary paths, line numbers,
// numbers inside paths and long ids are replaced by placeholders, and
// whitespace is collapsed. Values in assertions are kept: "assert 36 == 42"
// and "assert 35 == 42" are different failures.
func normaliseError(msg string) string {
	s := hexAddrRe.ReplaceAllString(msg, "0x?")
	s = tmpPathRe.ReplaceAllString(s, "<tmp>")
	s = pyLineRe.ReplaceAllString(s, "$1:N")
	s = lineWordRe.ReplaceAllString(s, "line N")
	s = pathRe.ReplaceAllStringFunc(s, func(p string) string {
		if !letterRe.MatchString(p) {
			return p // "1/2" is arithmetic, not a path
		}
		return digitsRe.ReplaceAllString(p, "N")
	})
	s = longNumRe.ReplaceAllString(s, "N")
	s = strings.TrimSpace(spaceRe.ReplaceAllString(s, " "))
	if len(s) > signatureLen {
		s = s[:signatureLen]
	}
	return s
}

// errorLine is the line of a test case that names its error: the first line
// of the JUnit message, else the last "E   " line of the traceback, else its
// last line.
func errorLine(c messages.TestCase) string {
	if m := strings.TrimSpace(c.Message); m != "" {
		return firstLine(m)
	}
	lines := strings.Split(strings.TrimSpace(c.Details), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "E ") {
			return strings.TrimSpace(strings.TrimPrefix(l, "E "))
		}
	}
	if len(lines) > 0 {
		return strings.TrimSpace(lines[len(lines)-1])
	}
	return string(c.Outcome)
}

// Signature is a failing test case's normalised error; with its test ID it
// identifies the failure across iterations. It comes from the JUnit XML
// fields of the case (never from pytest's text output).
func Signature(c messages.TestCase) string {
	return string(c.Outcome) + ": " + normaliseError(errorLine(c))
}

// failingSignatures maps each failing test ID of a report to its signature.
// A report that failed without a failing case (a crash before pytest wrote
// its XML) has one session failure.
func failingSignatures(r messages.TestReport) (ids []string, sigs map[string]string) {
	sigs = map[string]string{}
	for _, c := range r.Cases {
		if !protocol.Failing(c) {
			continue
		}
		id := protocol.TestID(c)
		if _, dup := sigs[id]; dup {
			continue
		}
		ids = append(ids, id)
		sigs[id] = Signature(c)
	}
	if len(ids) == 0 && !r.OK() {
		id := protocol.SessionTest
		msg := firstLine(r.Output)
		if r.TimedOut {
			msg = "timed out"
		}
		ids, sigs[id] = []string{id}, "session: "+normaliseError(msg)
	}
	return ids, sigs
}

// shortHash is the first 16 hex digits of the SHA-256 of parts, joined by NUL.
func shortHash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// fingerprint identifies a failing state: the code, the tests, the
// environment they ran in and the failures' signatures. The environment is
// part of it because a rebuild with new packages is a change, even when the
// code and tests are not.
func fingerprint(code, tests, env string, sigs map[string]string) string {
	keys := make([]string, 0, len(sigs))
	for id, sig := range sigs {
		keys = append(keys, id+"\x01"+sig)
	}
	sort.Strings(keys)
	return shortHash(shortHash(code), shortHash(tests), env, strings.Join(keys, "\x02"))
}

// envKey names an environment by its package sets, e.g. "numpy,pandas|libgl1".
func envKey(pkgs, system []string) string {
	p, s := normPackages(pkgs), normPackages(system)
	return strings.Join(p, ",") + "|" + strings.Join(s, ",")
}
