package machine

import (
	"sort"
	"strings"

	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/internal/pyscan"
	"github.com/autocoder/autocoder/pkg/messages"
)

// MissingPackages are the packages a build could not find and what stands
// in for them.
type MissingPackages struct {
	InvalidPackages []string `json:"invalid_packages,omitempty"`
	// Replacements maps a package the build could not find (canonical name)
	// to the one the model named instead ("" = go without); ReplaceTries
	// counts the model's tries per originally missing package.
	Replacements map[string]string `json:"replacements,omitempty"`
	ReplaceTries map[string]int    `json:"replace_tries,omitempty"`
}

// maxReplaceTries is how many replacements the model may name for one
// missing package before the job goes without it.
const maxReplaceTries = 3

// askReplacements asks the model, once per missing package and at most
// maxReplaceTries times along a chain of failed replacements, for a package
// that exists in its place. The rebuild waits for the answers (env treats a
// pending package_replacement as not ready).
func (m *Stepper) askReplacements(p Pending, out messages.BuildOutput) {
	s := m.s
	m.replacementMaps()
	sol, _, _ := m.line(p.Candidate)
	var imports []string
	if sol != nil {
		imports = pyscan.Imports(sol.Code)
	}
	for _, bad := range out.InvalidPackages {
		orig := m.origin(bad)
		if s.ReplaceTries[orig] >= maxReplaceTries {
			s.Replacements[protocol.CanonicalName(bad)] = ""
			m.Note("no package found in place of " + orig + " after " + itoa(maxReplaceTries) + " tries: building without it")
			continue
		}
		s.ReplaceTries[orig]++
		kind := "pip"
		if containsCanonical(s.SystemPackages, bad) || (sol != nil && containsCanonical(sol.SystemPackages, bad)) {
			kind = "apt"
		}
		m.Note("the build could not find " + bad + ": asking the model for a replacement")
		m.dispatchWith(messages.StagePackageReplacement, messages.PackageReplacementInput{
			Package: bad, Kind: kind, Log: trimLog(out.Log), Tried: m.tried(orig), Imports: imports,
		}, Pending{Candidate: p.Candidate, Package: bad})
	}
}

// replacementMaps makes the maps (an empty map does not survive the state's
// JSON round trip).
func (m *Stepper) replacementMaps() {
	if m.s.Replacements == nil {
		m.s.Replacements = map[string]string{}
	}
	if m.s.ReplaceTries == nil {
		m.s.ReplaceTries = map[string]int{}
	}
}

// replaced records the model's answer; the next advance rebuilds with it.
func (m *Stepper) replaced(p Pending, out messages.PackageReplacement) {
	s := m.s
	rep := ""
	if out.Replacement != nil {
		rep = strings.TrimSpace(*out.Replacement)
	}
	if rep != "" && containsCanonical(s.InvalidPackages, rep) {
		rep = "" // known missing already
	}
	m.replacementMaps()
	s.Replacements[protocol.CanonicalName(p.Package)] = rep
	if rep == "" {
		m.Note("no replacement for " + p.Package + ": building without it")
	} else {
		m.Note("replacing " + p.Package + " with " + rep)
	}
	m.advance()
}

// substitute adds, for every package with a recorded replacement, the
// replacement (following a chain of failed replacements); the missing
// names themselves are removed by the caller with the invalid packages.
func (m *Stepper) substitute(ps []string) []string {
	s := m.s
	if len(s.Replacements) == 0 {
		return ps
	}
	out := append([]string{}, ps...)
	for _, p := range ps {
		cur := protocol.CanonicalName(p)
		for i := 0; i <= maxReplaceTries; i++ {
			rep, ok := s.Replacements[cur]
			if !ok || rep == "" {
				break
			}
			out = append(out, rep)
			cur = protocol.CanonicalName(rep)
		}
	}
	return out
}

// origin is the package a (possibly replacement) name stands in for.
func (m *Stepper) origin(name string) string {
	c := protocol.CanonicalName(name)
	for i := 0; i <= maxReplaceTries; i++ {
		found := false
		for _, from := range replacementKeys(m.s.Replacements) { // sorted: Step stays deterministic
			if to := m.s.Replacements[from]; to != "" && protocol.CanonicalName(to) == c {
				c, found = from, true
				break
			}
		}
		if !found {
			break
		}
	}
	return c
}

// tried lists the names already tried for an originally missing package.
func (m *Stepper) tried(orig string) []string {
	out := []string{orig}
	cur := orig
	for i := 0; i < maxReplaceTries; i++ {
		rep, ok := m.s.Replacements[cur]
		if !ok || rep == "" {
			break
		}
		out = append(out, rep)
		cur = protocol.CanonicalName(rep)
	}
	return out
}

func containsCanonical(list []string, name string) bool {
	c := protocol.CanonicalName(name)
	for _, x := range list {
		if protocol.CanonicalName(x) == c {
			return true
		}
	}
	return false
}

func trimLog(s string) string {
	const max = 2000
	if len(s) <= max {
		return s
	}
	return s[len(s)-max:]
}

func replacementKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// replacementFailed: a failed replacement stage leaves the job without
// the package.
func (m *Stepper) replacementFailed(p Pending, r *messages.StageResult) {
	m.replacementMaps()
	m.s.Replacements[protocol.CanonicalName(p.Package)] = ""
	m.Note("the package_replacement stage failed (" + firstLine(r.Error) + "): building without " + p.Package)
	m.advance()
}
