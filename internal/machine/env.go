package machine

import (
	"strings"

	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/internal/pyscan"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Environment is the job's package sets and the image built for them.
type Environment struct {
	Packages       []string `json:"packages,omitempty"`        // detected + declared + added
	SystemPackages []string `json:"system_packages,omitempty"` // declared + added
	BuiltPackages  []string `json:"built_packages,omitempty"`  // the set Image was built for
	Image          string   `json:"image,omitempty"`
}

// ImportScan is what the import scan knows beyond its tables.
type ImportScan struct {
	// Stdlib is the sandbox interpreter's standard library, from the first
	// build that reported it (messages.BuildOutput.Stdlib): the import scan
	// leaves these modules out. Empty: pyscan's CPython 3.11 list is used
	// (StdlibNoted: the result says so, once).
	Stdlib       []string `json:"stdlib,omitempty"`
	StdlibNoted  bool     `json:"stdlib_noted,omitempty"`
	AskedImports []string `json:"asked_imports,omitempty"` // imports the model was asked to map, once each
}

// Builds are the environments built so far, and those that cannot be.
type Builds struct {
	Images     map[string]string `json:"images,omitempty"`      // env key -> image, every successful build
	FailedEnvs []string          `json:"failed_envs,omitempty"` // env keys whose build named invalid packages
}

// harnessPackages are the harness's own tools: every sandbox environment
// has them (the tests run under pytest), so an `import pytest` in the tests
// never changes the package set or forces a rebuild.
var harnessPackages = []string{"pytest"}

// env makes sure line c (0: the job's own solution; else a candidate) has
// an environment for its packages, and returns its image once built, with
// the package set. Packages come from a static scan of the code and the
// tests (tables first); only imports the tables cannot map go to the model,
// once each, and not while the code is still being rewritten (codeBusy).
// A build is dispatched as soon as the set is known, whatever else is
// pending; a set whose build named invalid packages fails the line.
func (m *stepper) env(c int, codeBusy bool) (image string, set []string, ready bool) {
	s := m.s
	sol, pkgs, asked := m.line(c)
	if sol == nil || m.busy(c, messages.StagePackages, messages.StagePackageReplacement) {
		return "", nil, false
	}
	dists, unknown := m.scan(sol)
	have := map[string]bool{}
	for _, p := range append(append(append([]string{}, dists...), *pkgs...), *asked...) {
		have[protocol.CanonicalName(p)] = true
	}
	var still []string
	for _, u := range unknown {
		if !have[protocol.CanonicalName(u)] {
			still = append(still, u)
		}
	}
	if len(still) > 0 {
		if codeBusy {
			return "", nil, false
		}
		*asked = append(*asked, still...)
		if c == 0 {
			m.enter(PhasePackages)
		}
		m.dispatchWith(messages.StagePackages, messages.PackagesInput{Imports: still, Stdlib: s.Stdlib}, Pending{Candidate: c})
		return "", nil, false
	}
	set = removePackages(normPackages(m.substitute(append(append([]string{}, *pkgs...), dists...))), append(append([]string{}, s.InvalidPackages...), harnessPackages...))
	*pkgs = set
	sys := normPackages(removePackages(m.substitute(append(append([]string{}, s.SystemPackages...), sol.SystemPackages...)), s.InvalidPackages))
	if c == 0 {
		s.SystemPackages = sys
	}
	key := envKey(set, sys)
	if img, ok := s.Images[key]; ok {
		return img, set, true
	}
	if contains(s.FailedEnvs, key) {
		m.lineFailed(c, "image build failed: invalid packages "+strings.Join(s.InvalidPackages, ", "))
		return "", nil, false
	}
	for _, p := range s.Pending {
		if p.Stage == messages.StageBuild && p.Env == key && !p.Orphan {
			return "", set, false // already building
		}
	}
	m.dispatchWith(messages.StageBuild, messages.BuildInput{Packages: set, SystemPackages: sys, Name: s.Spec.Name}, Pending{Candidate: c, Env: key})
	return "", set, false
}

// line returns the solution and package lists of line c.
func (m *stepper) line(c int) (*messages.Solution, *[]string, *[]string) {
	s := m.s
	if c == 0 {
		return s.Solution, &s.Packages, &s.AskedImports
	}
	cand := m.candidate(c)
	if cand == nil {
		return nil, nil, nil
	}
	return cand.Solution, &cand.Packages, &cand.Asked
}

func (m *stepper) lineFailed(c int, reason string) {
	if c == 0 {
		m.finish(messages.StatusFailed, reason)
		return
	}
	if cand := m.candidate(c); cand != nil && cand.Failed == "" {
		cand.Failed = reason
		m.note("candidate " + itoa(c) + " is out: " + reason)
	}
}

// scan maps the imports of the code and the tests (once they exist) to
// distributions; the model's own package list for the code is added, and
// packages the index rejected are left out. The standard library is the
// sandbox interpreter's own once a build reported it (learnStdlib), else
// CPython 3.11's.
func (m *stepper) scan(sol *messages.Solution) (dists, unknown []string) {
	s := m.s
	imports := pyscan.Imports(sol.Code)
	if s.Tests != nil {
		imports = append(imports, pyscan.Imports(s.Tests.Code)...)
	}
	var std pyscan.Set // nil: pyscan's CPython 3.11 list
	if len(s.Stdlib) > 0 {
		std = pyscan.NewSet(s.Stdlib...)
	}
	dists, unknown = pyscan.Resolver{Stdlib: std}.Distributions(imports)
	dists = append(dists, validPackages(sol.Packages)...)
	return removePackages(m.substitute(dists), s.InvalidPackages), unknown
}

// maxStdlib bounds the stdlib list kept in the state: real interpreters
// have a few hundred names; a longer list is not one.
const maxStdlib = 2000

// learnStdlib keeps the sandbox interpreter's standard library from a build
// result. The first scan of a job runs before any build, with the 3.11 list;
// once the target's own list is known, env rescans with it, and a package
// set it changes is built again (the sets are keyed by their packages), so
// the tests always run in an environment computed from the target's list.
// A build that reports no list leaves the 3.11 list in use, and says so once.
func (m *stepper) learnStdlib(names []string) {
	s := m.s
	if len(s.Stdlib) > 0 {
		return
	}
	if len(names) > 0 && len(names) <= maxStdlib {
		s.Stdlib = append([]string(nil), names...)
		return
	}
	if !s.StdlibNoted {
		s.StdlibNoted = true
		m.note("the sandbox did not report its Python's standard library: the import scan uses CPython 3.11's list")
	}
}
