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
func (m *Stepper) env(c int, codeBusy bool) (image string, built messages.BuildInput, ready bool) {
	sol, pkgs, asked := m.line(c)
	if sol == nil || m.busy(c, messages.StagePackages, messages.StagePackageReplacement) {
		return "", built, false
	}
	dists, unknown := m.scan(sol)
	if still := unmapped(unknown, dists, *pkgs, *asked); len(still) > 0 {
		if !codeBusy {
			*asked = append(*asked, still...)
			m.askPackages(c, still)
		}
		return "", built, false
	}
	set := removePackages(normPackages(m.substitute(append(append([]string{}, *pkgs...), dists...))), append(append([]string{}, m.s.InvalidPackages...), harnessPackages...))
	*pkgs = set
	sys := normPackages(removePackages(m.substitute(append(append([]string{}, m.s.SystemPackages...), sol.SystemPackages...)), m.s.InvalidPackages))
	if c == 0 {
		m.s.SystemPackages = sys
	}
	image, ready = m.build(c, set, sys)
	return image, messages.BuildInput{Packages: set, SystemPackages: sys, Name: m.s.Spec.Name}, ready
}

// unmapped is the imports the scan could not map that no package of the
// line covers and the model was not asked about yet.
func unmapped(unknown []string, have ...[]string) []string {
	covered := map[string]bool{}
	for _, ps := range have {
		for _, p := range ps {
			covered[protocol.CanonicalName(p)] = true
		}
	}
	var still []string
	for _, u := range unknown {
		if !covered[protocol.CanonicalName(u)] {
			still = append(still, u)
		}
	}
	return still
}

// askPackages asks the model for the distributions of imports the scan
// could not map.
func (m *Stepper) askPackages(c int, imports []string) {
	if c == 0 {
		m.Enter(PhasePackages)
	}
	m.dispatchWith(messages.StagePackages, messages.PackagesInput{Imports: imports, Stdlib: m.s.Stdlib}, Pending{Candidate: c})
}

// build returns the image of the environment (set, sys) once it is built;
// until then it dispatches its build, once. A set whose build named invalid
// packages fails the line.
func (m *Stepper) build(c int, set, sys []string) (image string, ready bool) {
	s := m.s
	key := envKey(set, sys)
	if img, ok := s.Images[key]; ok {
		return img, true
	}
	if contains(s.FailedEnvs, key) {
		m.lineFailed(c, "image build failed: invalid packages "+strings.Join(s.InvalidPackages, ", "))
		return "", false
	}
	for _, p := range s.Pending {
		if p.Stage == messages.StageBuild && p.Env == key && !p.Orphan {
			return "", false // already building
		}
	}
	m.dispatchWith(messages.StageBuild, messages.BuildInput{Packages: set, SystemPackages: sys, Name: s.Spec.Name}, Pending{Candidate: c, Env: key})
	return "", false
}

// line returns the solution and package lists of line c.
func (m *Stepper) line(c int) (*messages.Solution, *[]string, *[]string) {
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

func (m *Stepper) lineFailed(c int, reason string) {
	if c == 0 {
		m.Finish(messages.StatusFailed, reason)
		return
	}
	if cand := m.candidate(c); cand != nil && cand.Failed == "" {
		cand.Failed = reason
		m.Note("candidate " + itoa(c) + " is out: " + reason)
	}
}

// scan maps the imports of the code and the tests (once they exist) to
// distributions; the model's own package list for the code is added, and
// packages the index rejected are left out. The standard library is the
// sandbox interpreter's own once a build reported it (learnStdlib), else
// CPython 3.11's.
func (m *Stepper) scan(sol *messages.Solution) (dists, unknown []string) {
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
func (m *Stepper) learnStdlib(names []string) {
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
		m.Note("the sandbox did not report its Python's standard library: the import scan uses CPython 3.11's list")
	}
}

// built registers an image, or drops the packages the index does not have.
func (m *Stepper) built(p Pending, out messages.BuildOutput) {
	s := m.s
	if len(out.InvalidPackages) > 0 {
		s.InvalidPackages = normPackages(append(s.InvalidPackages, out.InvalidPackages...))
		if p.Env != "" && !contains(s.FailedEnvs, p.Env) {
			s.FailedEnvs = append(s.FailedEnvs, p.Env)
		}
		m.askReplacements(p, out) // replace.go: the model names packages that exist
		m.advance()               // rebuilds once the replacements are in, or fails the line if nothing changes
		return
	}
	if p.Env != "" {
		m.keepImage(p.Env, out.Image)
	}
	m.learnStdlib(out.Stdlib) // env.go: a rescan may change the set and rebuild
	m.advance()
}

// keepImage registers the image built for the environment env.
func (m *Stepper) keepImage(env, image string) {
	if m.s.Images == nil {
		m.s.Images = map[string]string{}
	}
	m.s.Images[env] = image
}

// packaged adds the distributions the model named for unmapped imports.
func (m *Stepper) packaged(p Pending, out messages.Packages) {
	if p.Candidate > 0 {
		if c := m.candidate(p.Candidate); c != nil {
			c.Packages = normPackages(append(c.Packages, validPackages(out.Packages)...))
		}
	} else {
		m.s.Packages = normPackages(append(m.s.Packages, validPackages(out.Packages)...))
	}
	m.advance()
}

// packagesFailed: a failed package mapping of the job's own line leaves
// those imports unmapped (a missing module then shows in the test run, as
// an environment failure); a candidate's is out.
func (m *Stepper) packagesFailed(p Pending, r *messages.StageResult) {
	if p.Candidate > 0 {
		m.stageFailed(p, r)
		return
	}
	m.Note("the packages stage failed (" + firstLine(r.Error) + "): building without the unmapped imports")
	m.advance()
}
