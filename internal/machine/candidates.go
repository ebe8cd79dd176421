package machine

import (
	"fmt"
	"strconv"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Candidates (options.candidates: k > 1).
//
// The first round writes k solutions at once, from the same plan, each with
// its own CodeInput (Candidate i of k, so each has its own cache key and a
// model sees that it is one of several). One test file is written for all
// of them, concurrently. Each candidate then goes its own way: its packages
// are scanned, its environment built (candidates with the same package set
// share one build) and, once the tests are there, it is tested. This is one
// iteration, whatever k is.
//
// The first candidate whose tests pass wins: it becomes the job's solution
// and the job goes on to acceptance. The other candidates' stages still in
// flight become orphans: their results are counted (tokens, stage list)
// when they arrive before the job ends, and otherwise ignored. A candidate
// whose stage fails is out; the job fails only when all are.
//
// When every candidate has been tested and none passed, the one with the
// fewest failing tests (then the most passing, then the lowest index) is
// kept and repaired as a single solution would be; the others are dropped.

// CandidateRound is the candidate round's part of the state.
type CandidateRound struct {
	Candidates []Candidate `json:"candidates,omitempty"` // the candidate round (options.candidates > 1)
}

// Candidate is one of options.candidates independent solutions of the
// first round. Each is built and tested on its own; the first that passes
// becomes the job's solution.
type Candidate struct {
	Index    int                  `json:"index"` // 1-based
	Solution *messages.Solution   `json:"solution,omitempty"`
	Packages []string             `json:"packages,omitempty"`
	Asked    []string             `json:"asked,omitempty"` // imports the model was asked to map
	Image    string               `json:"image,omitempty"`
	Report   *messages.TestReport `json:"report,omitempty"`
	Failed   string               `json:"failed,omitempty"` // why it could not be tested
}

func (c *Candidate) done() bool { return c.Report != nil || c.Failed != "" }

func itoa(i int) string { return strconv.Itoa(i) }

func (m *Stepper) startCandidates(in messages.CodeInput, k int) {
	s := m.s
	s.Candidates = make([]Candidate, k)
	for i := range s.Candidates {
		s.Candidates[i] = Candidate{Index: i + 1, Packages: append([]string(nil), s.Packages...)}
		ci := in
		ci.Candidate, ci.Candidates = i+1, k
		m.dispatchWith(messages.StageCode, ci, Pending{Candidate: i + 1})
	}
}

func (m *Stepper) candidate(i int) *Candidate {
	for j := range m.s.Candidates {
		if m.s.Candidates[j].Index == i {
			return &m.s.Candidates[j]
		}
	}
	return nil
}

// advanceCandidates moves every candidate towards its test run, then
// concludes the round when all have a result.
func (m *Stepper) advanceCandidates() {
	s := m.s
	for i := range s.Candidates {
		c := &s.Candidates[i]
		if c.done() || c.Solution == nil || m.busy(c.Index, messages.StageRunTests) {
			continue
		}
		img, built, ready := m.env(c.Index, false)
		if s.Done() {
			return
		}
		if !ready || s.Tests == nil || m.busy(0, messages.StageTests) {
			continue
		}
		c.Image = img
		if s.Iteration == 0 {
			s.Iteration = 1 // the candidate round is one iteration
		}
		m.dispatchWith(messages.StageRunTests, messages.RunTestsInput{
			// Env: the worker builds (or finds) the candidate's own
			// environment; without it, it ran in the base one.
			Image: img, Env: built, Code: c.Solution.Code, Tests: s.Tests.Code, Samples: s.Samples,
			Timeout: s.Spec.Options.Timeout, Resources: s.Spec.Options.Resources,
		}, Pending{Candidate: c.Index})
	}
	m.concludeCandidates()
}

func (m *Stepper) candidateReport(i int, out messages.TestReport) {
	s := m.s
	c := m.candidate(i)
	if c == nil {
		return
	}
	rep := trimReport(out)
	c.Report = &rep
	if rep.OK() {
		m.adopt(c)
		m.Note(fmt.Sprintf("candidate %d of %d passed first; the other candidates' results are ignored", i, len(s.Candidates)))
		m.orphanCandidates()
		s.Candidates = nil
		s.LastReport = c.Report
		m.testsPassed() // strength.go
		return
	}
	m.concludeCandidates()
}

// concludeCandidates ends the candidate round once every candidate has a
// result and none passed: the best one is repaired as the job's solution.
func (m *Stepper) concludeCandidates() {
	s := m.s
	if s.Done() || len(s.Candidates) == 0 {
		return
	}
	var best *Candidate
	for i := range s.Candidates {
		c := &s.Candidates[i]
		if !c.done() {
			return
		}
		if c.Report != nil && (best == nil || better(*c.Report, *best.Report)) {
			best = c
		}
	}
	if best == nil {
		reasons := make([]string, 0, len(s.Candidates))
		for _, c := range s.Candidates {
			reasons = append(reasons, fmt.Sprintf("candidate %d: %s", c.Index, c.Failed))
		}
		m.Finish(messages.StatusFailed, "no candidate could be tested: "+joinShort(reasons, 4))
		return
	}
	m.adopt(best)
	m.Note(fmt.Sprintf("no candidate of %d passed: repairing candidate %d (%s)", len(s.Candidates), best.Index, reportSummary(*best.Report)))
	m.orphanCandidates()
	s.Candidates = nil
	m.report(*best.Report)
}

// better orders failing reports: fewer failing tests, then more passing.
func better(a, b messages.TestReport) bool {
	fa, fb := a.Failed+a.Errors, b.Failed+b.Errors
	if fa != fb {
		return fa < fb
	}
	return a.Passed > b.Passed
}

// adopt makes candidate c the job's solution.
func (m *Stepper) adopt(c *Candidate) {
	s := m.s
	s.Solution = c.Solution
	s.Packages = c.Packages
	s.AskedImports = normPackages(append(s.AskedImports, c.Asked...))
	s.Image, s.BuiltPackages = c.Image, c.Packages
	s.SystemPackages = normPackages(removePackages(append(s.SystemPackages, c.Solution.SystemPackages...), s.InvalidPackages))
}

// orphanCandidates marks the candidates' stages still pending as orphans.
// (An orphan build that succeeds still registers its image.)
func (m *Stepper) orphanCandidates() {
	for seq, p := range m.s.Pending {
		if p.Candidate > 0 {
			p.Orphan = true
			m.s.Pending[seq] = p
		}
	}
}

// orphanResult handles a losing candidate's stage: counted and listed
// (record), nothing more, except that an image is worth keeping.
func (m *Stepper) orphanResult(p Pending, r *messages.StageResult) {
	if r.Stage != messages.StageBuild || r.Error != "" || p.Env == "" {
		return
	}
	if out, err := decode[messages.BuildOutput](r); err == nil && out.Image != "" {
		m.keepImage(p.Env, out.Image)
	}
}

// candidateFailed takes a candidate's failed stage: that candidate is out,
// and the others go on.
func (m *Stepper) candidateFailed(p Pending, r *messages.StageResult) {
	if c := m.candidate(p.Candidate); c != nil {
		c.Failed = fmt.Sprintf("stage %s failed: %s", r.Stage, firstLine(r.Error))
		m.Note(fmt.Sprintf("candidate %d is out: %s", c.Index, c.Failed))
		m.advance()
	}
}
