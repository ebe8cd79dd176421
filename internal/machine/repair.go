package machine

import (
	"fmt"
	"strings"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Repair: how a failing run becomes the next run.
//
//  1. observe: every failing test gets a signature (its normalised error,
//     from the JUnit XML) and a Track across iterations; a failure whose
//     signature is the one it had before the last round survived the
//     repair that round gave it.
//  2. Stuck detection: a run whose fingerprint (code, tests, packages,
//     signatures) was already seen made no progress, and so did staleRuns
//     runs in a row whose every failure kept its signature (the code
//     reworded, not fixed). The strategy changes:
//     the code is regenerated from the plan, with the failure history as
//     hints, up to maxRegenerations times; after that the job stops with
//     the reason. So the loop never repeats itself without progress.
//  3. The diagnosis classifies each failure; classify may override it with
//     what the tracks show (reclassification, below), and the routes are
//     computed from the final classes, after every flip.
//  4. Routing, one round per diagnosis: logic failures go to one fix of the
//     code, test_error failures to one patch of just their test functions,
//     environment failures to new packages and a rebuild (code and tests
//     kept). A mixed diagnosis gets all of them in the same round,
//     concurrently: the fix changes only solution.py and the patch only the
//     failing test functions, and a test is in exactly one class, so they
//     cannot conflict; the rebuild starts at once for the current code and
//     is redone only if the fix imports more. The tests run once, when
//     everything is in.
//  5. Verification: a fix is checked mechanically (the code changed; the
//     snippet the diagnosis says to replace is gone, the one it suggests is
//     there); the verify stage is asked only about fixes the check cannot
//     decide; a fix whose suggested snippet appears while the snippet it
//     replaces is still there is undecided (verify stage), not applied. A
//     patch is checked by comparing each failing test function before and
//     after, and every other test function must be unchanged (a patch that
//     changed one is unverified). What was not applied is asked again with
//     escalating instructions (escalation 1, then 2) naming what is
//     missing; after the third attempt the round proceeds anyway.
//
// Reclassification (classify): a failure that survived
//   - a test patch that was applied becomes logic: the test was patched and fails the same
//     way, so the code is at fault;
//   - a code fix that was verified as applied (the check found the
//     suggested change, or the verify stage confirmed it; merely changed
//     code is not enough) may become test_error: the code changed as the
//     diagnosis asked (the diagnosis called the test right) and the test
//     fails the same way, so the test is suspect. Only
//     once per test, and never after it was moved to logic: no ping-pong;
//     the stuck detector handles a test both routes failed;
//   - new packages becomes logic.
//
// An environment failure with nothing new to install is logic (a rebuild of
// the same image cannot change anything), and an empty diagnosis becomes
// one logic failure per failing test: no round is ever empty.

// RepairLog is the repair bookkeeping of the state. Everything here is
// bounded, so the state stays far below the KV value limit whatever the job
// does.
type RepairLog struct {
	Tracks        []Track       `json:"tracks,omitempty"` // failing tests of the last run, across iterations
	Seen          []Fingerprint `json:"seen,omitempty"`   // failing states already tested (stuck detection)
	Round         *Round        `json:"round,omitempty"`  // the repair round in progress
	Regenerations int           `json:"regenerations,omitempty"`
	// RegeneratedAt is the iteration of the last regeneration: failures
	// that outlast staleRuns test runs after it are stuck (stale).
	RegeneratedAt int `json:"regenerated_at,omitempty"`
}

// staleRuns is how many test runs in a row every failure may keep its
// signature, through repairs, before the loop counts as stuck though the
// code changed each time: a model whose fixes only reword the code never
// repeats a fingerprint, and would spend every iteration so.
const staleRuns = 3

// stale reports whether every failing test has failed the same way for
// the last staleRuns runs, all since the last regeneration.
func (m *Stepper) stale() bool {
	s := m.s
	if len(s.Tracks) == 0 || s.Iteration-s.RegeneratedAt < staleRuns {
		return false
	}
	for _, t := range s.Tracks {
		if t.Runs < staleRuns {
			return false
		}
	}
	return true
}

// Route is the repair a failing test got in a round.
type Route string

const (
	RouteFix        Route = "fix"        // logic: a code fix
	RoutePatch      Route = "patch"      // test_error: a patch of the test function
	RoutePackages   Route = "packages"   // environment: packages added, image rebuilt
	RouteRegenerate Route = "regenerate" // the loop was stuck: code written again from the plan
)

// Track follows one failing test across iterations, so the loop can tell a
// failure that survived its repair from a new one.
type Track struct {
	Test      string `json:"test"`      // protocol.TestID form
	Signature string `json:"signature"` // normalised error (see Signature)
	Since     int    `json:"since"`     // iteration in which this signature first appeared
	Runs      int    `json:"runs"`      // consecutive runs with this signature
	// Survived: the signature is the one the test had before the last
	// round, which applied LastRepair to it (verified if LastApplied).
	Survived    bool  `json:"survived,omitempty"`
	LastRepair  Route `json:"last_repair,omitempty"`
	LastApplied bool  `json:"last_applied,omitempty"`
	// Class and Repair are what the current round decided for it.
	Class  messages.ErrorType `json:"class,omitempty"`
	Repair Route              `json:"repair,omitempty"`
	// Applied is set when the round ends: its repair was verified as applied.
	Applied bool     `json:"applied,omitempty"`
	Flips   []string `json:"flips,omitempty"` // reclassifications, "test_error->logic"
	Fixes   int      `json:"fixes,omitempty"` // repairs tried on it, for the failure history
	Patches int      `json:"patches,omitempty"`
}

// Fingerprint identifies a failing state: code, tests, environment and
// failure signatures. The same fingerprint twice means no progress.
type Fingerprint struct {
	Iteration int    `json:"iteration"`
	Hash      string `json:"hash"`
}

// Round is one repair round: the fixes, test patches and rebuilds that one
// diagnosis (or acceptance failure) asked for, with their verification.
type Round struct {
	Iteration  int                `json:"iteration"`
	Acceptance bool               `json:"acceptance,omitempty"` // repairing an acceptance failure
	BaseCode   string             `json:"base_code"`            // before the fix, for verification
	BaseTests  string             `json:"base_tests,omitempty"` // before the patch, for verification
	Logic      []messages.Failure `json:"logic,omitempty"`      // routed to the code fix
	TestErrors []messages.Failure `json:"test_errors,omitempty"`
	// Attempts so far; attempt n is sent with escalation n-1.
	FixAttempts   int          `json:"fix_attempts,omitempty"`
	PatchAttempts int          `json:"patch_attempts,omitempty"`
	Fix           RepairStatus `json:"fix,omitempty"`   // pending, verifying, applied, assumed or unverified
	Patch         RepairStatus `json:"patch,omitempty"` // pending, applied or unverified
}

// maxRepairAttempts bounds the attempts at one fix or patch in a round.
const maxRepairAttempts = 3

// maxRegenerations bounds how often a stuck loop regenerates the code.
const maxRegenerations = 2

// observe updates the tracks from a failing report and returns its
// failure signatures by test ID.
func (m *Stepper) observe(rep messages.TestReport) map[string]string {
	s := m.s
	ids, sigs := failingSignatures(rep)
	old := map[string]Track{}
	for _, t := range s.Tracks {
		old[t.Test] = t
	}
	var tracks []Track
	for _, id := range ids {
		t := Track{Test: id, Signature: sigs[id], Since: s.Iteration, Runs: 1}
		if o, ok := old[id]; ok {
			t.Class, t.Flips, t.Fixes, t.Patches = o.Class, o.Flips, o.Fixes, o.Patches
			t.LastRepair, t.LastApplied = o.Repair, o.Applied
			if o.Signature == t.Signature {
				t.Since, t.Runs = o.Since, o.Runs+1
				t.Survived = o.Repair != ""
			}
		}
		tracks = append(tracks, t)
		if len(tracks) == maxTracks {
			break
		}
	}
	var fixed []string
	for _, t := range s.Tracks {
		if _, still := sigs[t.Test]; !still {
			fixed = append(fixed, t.Test)
		}
	}
	if len(fixed) > 0 {
		m.Note(fmt.Sprintf("iteration %d: %s pass now", s.Iteration, joinShort(fixed, 5)))
	}
	s.Tracks = tracks
	return sigs
}

func (m *Stepper) track(id string) *Track {
	for i := range m.s.Tracks {
		if m.s.Tracks[i].Test == id {
			return &m.s.Tracks[i]
		}
	}
	return nil
}

// repeated records fingerprint fp and reports whether it was seen before,
// in which case it has already changed strategy or stopped the job.
func (m *Stepper) repeated(fp, what string) bool {
	s := m.s
	for _, f := range s.Seen {
		if f.Hash == fp {
			m.unstick(fmt.Sprintf("%s as iteration %d", what, f.Iteration))
			return true
		}
	}
	s.Seen = append(s.Seen, Fingerprint{Iteration: s.Iteration, Hash: fp})
	if len(s.Seen) > maxSeen {
		s.Seen = append([]Fingerprint(nil), s.Seen[len(s.Seen)-maxSeen:]...)
	}
	return false
}

// unstick changes strategy when the loop made no progress: it regenerates
// the code from the plan with the failure history as hints (the tests,
// when every failure left is the tests' own: patches did not mend them,
// and new code cannot), or, when it has done that maxRegenerations times,
// stops the job.
func (m *Stepper) unstick(why string) {
	s := m.s
	if s.Regenerations >= maxRegenerations {
		if m.fallBack("still failed when the loop got stuck (" + why + ")") { // strength.go
			return
		}
		m.Finish(messages.StatusFailed, fmt.Sprintf("stuck: iteration %d repeated %s, after %d regenerations of the code; stopping instead of repeating it (%s)",
			s.Iteration, why, s.Regenerations, m.failingSummary()))
		return
	}
	s.Regenerations++
	s.RegeneratedAt = s.Iteration
	testsAtFault := len(s.Tracks) > 0 && !s.Spec.Options.SkipTests
	for _, t := range s.Tracks {
		testsAtFault = testsAtFault && t.Class == messages.ErrorTestError
	}
	for i := range s.Tracks {
		s.Tracks[i].Repair, s.Tracks[i].Applied = RouteRegenerate, false
	}
	s.Round = nil
	m.Enter(PhaseGenerating)
	if testsAtFault {
		m.Note(fmt.Sprintf("stuck: iteration %d repeated %s, every failure the tests' own; regenerating the tests from the task (regeneration %d of %d) instead of patching them",
			s.Iteration, why, s.Regenerations, maxRegenerations))
		s.Tests = nil
		m.Dispatch(messages.StageTests, messages.TestsInput{Task: s.Task, DataContext: s.DataContext, Plan: planOf(s),
			Attempt: s.Regenerations, Hints: m.failureHistory()})
		return
	}
	m.Note(fmt.Sprintf("stuck: iteration %d repeated %s; regenerating the code from the plan (regeneration %d of %d) instead of patching it",
		s.Iteration, why, s.Regenerations, maxRegenerations))
	m.Dispatch(messages.StageCode, messages.CodeInput{
		Task: s.Task, DataContext: s.DataContext, Plan: planOf(s), BasePackages: s.Spec.Options.BasePackages,
		Attempt: s.Regenerations, Hints: m.failureHistory(),
	})
}

func (m *Stepper) failingSummary() string {
	s := m.s
	var fs []string
	for _, t := range s.Tracks {
		fs = append(fs, t.Test+": "+t.Signature)
	}
	if len(fs) == 0 && s.Acceptance != nil && !s.Acceptance.OK {
		fs = append(fs, "acceptance run: "+strings.Join(s.Acceptance.Problems, "; "))
	}
	if len(fs) == 0 {
		return "no failing test recorded"
	}
	return "failing: " + joinShort(fs, 3)
}

// failureHistory describes each failing test and what was tried, for a
// regeneration's hints.
func (m *Stepper) failureHistory() []string {
	s := m.s
	var out []string
	for _, t := range s.Tracks {
		out = append(out, fmt.Sprintf("%s fails with %q since iteration %d (%s)", t.Test, t.Signature, t.Since, tried(t)))
	}
	if s.Acceptance != nil && !s.Acceptance.OK {
		out = append(out, "the run on the real samples failed: "+strings.Join(s.Acceptance.Problems, "; "))
	}
	return trimAll(out, failureFieldBudget, maxHints)
}

func tried(t Track) string {
	var parts []string
	if t.Fixes > 0 {
		parts = append(parts, fmt.Sprintf("code fixes: %d", t.Fixes))
	}
	if t.Patches > 0 {
		parts = append(parts, fmt.Sprintf("test patches: %d", t.Patches))
	}
	if len(t.Flips) > 0 {
		parts = append(parts, "reclassified "+strings.Join(t.Flips, ", "))
	}
	if len(parts) == 0 {
		return "nothing tried yet"
	}
	return strings.Join(parts, "; ")
}

// diagnoseHints tells the diagnosis what the loop knows: recent notes and
// the failures that survived their repairs.
func (m *Stepper) diagnoseHints() []string {
	s := m.s
	hints := append([]string(nil), lastNotes(s.Notes, 5)...)
	for _, t := range s.Tracks {
		if t.Survived {
			hints = append(hints, fmt.Sprintf("%s still fails the same way after a %s (%d runs since iteration %d; %s)", t.Test, repairWord(t.LastRepair), t.Runs, t.Since, tried(t)))
		}
	}
	return trimAll(hints, failureFieldBudget, maxHints)
}

func repairWord(r Route) string {
	switch r {
	case RouteFix:
		return "code fix"
	case RoutePatch:
		return "test patch"
	case RoutePackages:
		return "rebuild with new packages"
	case RouteRegenerate:
		return "regeneration of the code"
	}
	return "repair"
}

// flip is one reclassification.
type flip struct {
	Test     string
	From, To messages.ErrorType
	Why      string
}

// repairPlan is what one diagnosis asks for, after reclassification.
type repairPlan struct {
	Logic, TestErrors, Env []messages.Failure
	Flips                  []flip
}

// classify decides the class a diagnosed failure is routed by, from the
// model's class, the test's track (nil for a failure without one) and
// whether the diagnosis names packages not installed yet. why is set when a
// rule decided the class (it may agree with the model).
func classify(f messages.Failure, t *Track, newEnv bool) (cls messages.ErrorType, why string) {
	model := f.ErrorType
	switch model {
	case messages.ErrorLogic, messages.ErrorTestError, messages.ErrorEnvironment:
	default:
		model = messages.ErrorLogic
	}
	if model == messages.ErrorEnvironment && newEnv {
		return model, "" // something new to install: try it
	}
	if t != nil && t.Survived {
		if cls, why, ok := classifySurvivor(model, t); ok {
			return cls, why
		}
	}
	if model == messages.ErrorEnvironment {
		return messages.ErrorLogic, "an environment failure with nothing new to install cannot be fixed by a rebuild"
	}
	return model, ""
}

// classifySurvivor applies the rules for a failure that survived its last
// repair (see the top of this file); ok is false when none applies.
func classifySurvivor(model messages.ErrorType, t *Track) (cls messages.ErrorType, why string, ok bool) {
	switch {
	case t.LastRepair == RoutePatch && t.LastApplied: // a patch never applied left the test as it was: it says nothing
		return messages.ErrorLogic, "its failure survived a patch of the test, so the code is at fault", true
	case t.LastRepair == RouteFix && model == messages.ErrorTestError:
		return model, "", true
	case t.LastRepair == RouteFix && t.LastApplied && len(t.Flips) == 0:
		return messages.ErrorTestError, "its failure survived a code fix that was verified as applied, so the test is suspect", true
	case t.LastRepair == RoutePackages && model == messages.ErrorEnvironment:
		return messages.ErrorLogic, "new packages did not change its failure", true
	}
	return "", "", false
}

// planRepair classifies every failure and groups them by route. A flip is
// recorded when a surviving failure's class changes from the one it was
// routed by in the last round, whoever changed it.
func planRepair(failures []messages.Failure, tracks []Track, newEnv bool) repairPlan {
	byTest := map[string]*Track{}
	for i := range tracks {
		byTest[tracks[i].Test] = &tracks[i]
	}
	var p repairPlan
	for _, f := range failures {
		t := byTest[f.TestName]
		cls, why := classify(f, t, newEnv)
		if t != nil && t.Survived && t.Class != "" && t.Class != cls {
			if why == "" {
				why = "the diagnosis changed it after its failure survived a " + repairWord(t.LastRepair)
			}
			p.Flips = append(p.Flips, flip{Test: f.TestName, From: t.Class, To: cls, Why: why})
		}
		f.ErrorType = cls
		switch cls {
		case messages.ErrorTestError:
			p.TestErrors = append(p.TestErrors, f)
		case messages.ErrorEnvironment:
			p.Env = append(p.Env, f)
		default:
			p.Logic = append(p.Logic, f)
		}
	}
	return p
}

// route starts the repair round of a diagnosis (see the top of this file).
func (m *Stepper) route(_ Pending, d messages.Diagnosis) {
	s := m.s
	d = trimDiagnosis(d)
	s.Diagnosis = storedDiagnosis(d)
	failures := d.Failures
	if len(failures) == 0 {
		failures = failuresFromReport(s.LastReport)
		m.Note("the diagnosis named no failure: fixing the code against the test report")
	}
	// New is what the build has not had yet: a package it refused, or one
	// every environment has (pytest), is not new, or an environment
	// failure naming it would go to the packages route, and rebuild the
	// same image, for ever.
	known := append(append(append([]string{}, s.Packages...), s.InvalidPackages...), harnessPackages...)
	added := newPackages(known, validPackages(d.NeedsPackages))
	addedSys := newPackages(append(append([]string{}, s.SystemPackages...), s.InvalidPackages...), validPackages(d.NeedsSystemPackages))
	p := planRepair(failures, s.Tracks, len(added)+len(addedSys) > 0)
	m.recordFlips(p.Flips)
	m.routeTracks(p.Logic, messages.ErrorLogic, RouteFix)
	m.routeTracks(p.TestErrors, messages.ErrorTestError, RoutePatch)
	m.routeTracks(p.Env, messages.ErrorEnvironment, RoutePackages)

	logic, testErrs := capFailures(m, p.Logic, "fix"), capFailures(m, p.TestErrors, "test patch")
	s.Round = &Round{Iteration: s.Iteration, BaseCode: s.Solution.Code, BaseTests: testsOf(s),
		Logic: trimFailures(logic), TestErrors: trimFailures(testErrs)}
	m.Enter(PhaseRepairing)
	if len(added)+len(addedSys) > 0 {
		s.Packages = normPackages(append(s.Packages, added...))
		s.SystemPackages = normPackages(append(s.SystemPackages, addedSys...))
		m.Note("adding packages: " + strings.Join(append(added, addedSys...), ", "))
	}
	if len(logic) > 0 {
		m.dispatchFix(nil) // over the token budget, this finishes the job and ends the round
	}
	if len(testErrs) > 0 && s.Round != nil {
		m.dispatchPatch(s.Round.TestErrors, nil)
	}
	m.advance() // the rebuild, concurrently; or the run, for packages alone
}

// recordFlips notes each reclassification and keeps it on its track.
func (m *Stepper) recordFlips(flips []flip) {
	for _, f := range flips {
		m.Note(fmt.Sprintf("reclassified %s: %s -> %s: %s", f.Test, f.From, f.To, f.Why))
		if t := m.track(f.Test); t != nil {
			t.Flips = append(t.Flips, string(f.From)+"->"+string(f.To))
		}
	}
}

// routeTracks records on the failures' tracks the class and the repair
// this round gives them.
func (m *Stepper) routeTracks(fs []messages.Failure, cls messages.ErrorType, r Route) {
	for _, f := range fs {
		t := m.track(f.TestName)
		if t == nil {
			continue
		}
		t.Class, t.Repair, t.Applied = cls, r, false
		switch r {
		case RouteFix:
			t.Fixes++
		case RoutePatch:
			t.Patches++
		}
	}
}

func capFailures(m *Stepper, fs []messages.Failure, what string) []messages.Failure {
	if len(fs) <= maxRoutedFailures {
		return fs
	}
	m.Note(fmt.Sprintf("%d failures for one %s: sending the first %d", len(fs), what, maxRoutedFailures))
	return fs[:maxRoutedFailures]
}

// endRound closes the round when its tests start: each track learns whether
// its repair was verified as applied.
func (m *Stepper) endRound() {
	s := m.s
	r := s.Round
	for i := range s.Tracks {
		t := &s.Tracks[i]
		switch t.Repair {
		case RouteFix:
			t.Applied = r != nil && r.Fix == RepairApplied
		case RoutePatch:
			t.Applied = r != nil && r.Patch == RepairApplied
		case RoutePackages, RouteRegenerate:
			t.Applied = true
		}
	}
	s.Round = nil
}

// dispatchFix sends the round's logic failures to the fix stage; attempt n
// carries escalation n-1 and the fixes found missing.
func (m *Stepper) dispatchFix(missing []string) {
	s := m.s
	r := s.Round
	in := messages.FixInput{Task: s.Task, Plan: planOf(s), Code: s.Solution.Code, Tests: testsOf(s),
		Failures: r.Logic, Packages: s.Packages, Escalation: r.FixAttempts, Missing: missing, Reflect: m.kind.loop.reflect}
	r.FixAttempts++
	r.Fix = RepairPending
	m.Dispatch(messages.StageFix, in)
}

// fixed takes the fixed code and verifies it (fixArrived).
func (m *Stepper) fixed(_ Pending, out messages.Solution) {
	m.s.Solution = &out
	m.fixArrived()
}

// fixArrived verifies a fix: mechanically first, with the verify stage for
// what that cannot decide. A fix of an acceptance failure is verified by
// the next acceptance run, so only unchanged code counts against it there.
func (m *Stepper) fixArrived() {
	s := m.s
	r := s.Round
	if r == nil || r.Fix != RepairPending {
		m.advance()
		return
	}
	missing, undecided := checkFix(r.BaseCode, s.Solution.Code, r.Logic)
	switch {
	case len(missing) > 0:
		m.fixNotApplied(missing, "the mechanical check")
	case len(undecided) == 0 && hasSuggestions(r.Logic):
		r.Fix = RepairApplied
		m.advance()
	case len(undecided) == 0 || r.Acceptance:
		r.Fix = RepairAssumed
		m.advance()
	default:
		r.Fix = RepairVerifying
		m.Dispatch(messages.StageVerify, messages.VerifyInput{OldCode: r.BaseCode, NewCode: s.Solution.Code, Failures: undecided})
	}
}

func (m *Stepper) verified(_ Pending, v messages.FixVerification) {
	r := m.s.Round
	if r == nil || r.Fix != RepairVerifying {
		m.advance()
		return
	}
	if v.AllFixesApplied && len(v.MissingFixes) == 0 {
		r.Fix = RepairApplied
		m.advance()
		return
	}
	missing := v.MissingFixes
	if len(missing) == 0 {
		missing = missingFixes(r.Logic)
	}
	m.fixNotApplied(missing, "the verify stage")
}

// fixNotApplied asks again with escalating instructions, or after the last
// attempt proceeds to the tests with the fix as it is.
func (m *Stepper) fixNotApplied(missing []string, by string) {
	s := m.s
	r := s.Round
	missing = trimAll(missing, failureFieldBudget, maxHints)
	if r.FixAttempts < maxRepairAttempts {
		m.Note(fmt.Sprintf("fix attempt %d was not applied (%s): %s; asking again with escalation %d",
			r.FixAttempts, by, joinShort(missing, 3), r.FixAttempts))
		m.dispatchFix(missing)
		return
	}
	r.Fix = RepairUnverified
	m.Note(fmt.Sprintf("fix attempt %d was still not applied (%s): %s; testing it anyway", r.FixAttempts, by, joinShort(missing, 3)))
	m.advance()
}

func (m *Stepper) dispatchPatch(failures []messages.Failure, missing []string) {
	s := m.s
	r := s.Round
	in := messages.PatchTestsInput{Task: s.Task, Code: s.Solution.Code, Tests: testsOf(s), Failures: failures,
		Escalation: r.PatchAttempts, Missing: missing}
	r.PatchAttempts++
	r.Patch = RepairPending
	m.Dispatch(messages.StagePatchTests, in)
}

// patched takes the patched test file and checks that every failing test
// function of the round changed; the ones that did not are patched again.
// It also checks that no other test function changed: a patch that touched
// a test that was not failing is unverified (the patch stage refuses such
// patches, so this guards against a worker that does not).
func (m *Stepper) patched(_ Pending, out messages.PatchTestsOutput) {
	s := m.s
	if strings.TrimSpace(out.Tests) != "" {
		s.Tests = &messages.Tests{Code: out.Tests}
	}
	if len(out.Reasons) > 0 {
		m.Note("test patches not applied: " + joinShort(out.Reasons, 5))
	} else if len(out.Unapplied) > 0 {
		m.Note("test patches not applied: " + strings.Join(out.Unapplied, ", "))
	}
	r := s.Round
	if r == nil || r.Patch != RepairPending {
		m.advance()
		return
	}
	if changed := changedOthers(r.BaseTests, testsOf(s), r.TestErrors); len(changed) > 0 {
		r.Patch = RepairUnverified
		m.Note(fmt.Sprintf("test patch attempt %d changed %s, which were not failing: the patch is unverified", r.PatchAttempts, joinShort(changed, 5)))
		m.advance()
		return
	}
	left := unpatched(r.BaseTests, testsOf(s), r.TestErrors, out.Unapplied)
	if len(left) == 0 {
		r.Patch = RepairApplied
		m.advance()
		return
	}
	names := make([]string, len(left))
	for i, f := range left {
		names[i] = f.TestName
	}
	if r.PatchAttempts < maxRepairAttempts {
		m.Note(fmt.Sprintf("test patch attempt %d left %s unchanged; asking again with escalation %d", r.PatchAttempts, joinShort(names, 5), r.PatchAttempts))
		m.dispatchPatch(left, names)
		return
	}
	r.Patch = RepairUnverified
	m.Note(fmt.Sprintf("test patch attempt %d still left %s unchanged; testing anyway", r.PatchAttempts, joinShort(names, 5)))
	m.advance()
}

// hasSuggestions reports whether any failure names a fix to check for.
func hasSuggestions(fs []messages.Failure) bool {
	for _, f := range fs {
		if strings.TrimSpace(f.SuggestedFix) != "" {
			return true
		}
	}
	return false
}

// verifyFailed: a failed verification leaves the fix unverified; it is
// tested as it is.
func (m *Stepper) verifyFailed(p Pending, r *messages.StageResult) {
	if m.s.Round == nil || m.s.Round.Fix != RepairVerifying {
		m.stageFailed(p, r)
		return
	}
	m.s.Round.Fix = RepairAssumed
	m.Note("the verify stage failed (" + firstLine(r.Error) + "): testing the fix unverified")
	m.advance()
}
