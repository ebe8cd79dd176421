package machine

import (
	"fmt"

	"github.com/autocoder/autocoder/pkg/messages"
)

// originalSamples are the samples a job was generated from (for a run,
// the samples it ran on), as the result names them: the job's files that
// are samples of its spec, not its File and Dir inputs.
func originalSamples(s State) []messages.SampleRef {
	var out []messages.SampleRef
	for _, r := range s.Samples {
		if _, ok := s.Spec.Samples[r.Name]; ok && !r.Dir {
			out = append(out, r)
		}
	}
	return out
}

// costByModel is the job's usage and cost by model: every model call of a
// job goes to the model its options name, priced by the llm-worker from
// the operator's model table (cached stages cost nothing).
func costByModel(s State) map[string]messages.ModelCost {
	u := s.Usage
	if u.Calls == 0 {
		return nil
	}
	return map[string]messages.ModelCost{s.Spec.Options.Model: {
		InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Calls: u.Calls, Cost: u.Cost}}
}

// retrySandbox sends a sandbox stage again after an infrastructure
// failure (the sandbox could not run it, after the worker's own
// deliveries) while options.sandbox_retries allow, and reports whether it
// did. A failing script or failing tests are results, never errors, so
// they are never retried here; nor is a permanent failure.
func (m *Stepper) retrySandbox(p Pending, r *messages.StageResult) bool {
	s := m.s
	if r.Error == "" || r.ErrorKind != messages.ErrorInfra || p.Orphan || p.Input == nil ||
		p.Retries >= s.Spec.Options.SandboxRetries || messages.DefaultStages().Pool(r.Stage) != messages.PoolSandbox {
		return false
	}
	m.Note(fmt.Sprintf("stage %s failed in the sandbox (%s): retry %d of %d (options.sandbox_retries)",
		r.Stage, firstLine(r.Error), p.Retries+1, s.Spec.Options.SandboxRetries))
	next := Pending{Candidate: p.Candidate, Env: p.Env, Package: p.Package, Retries: p.Retries + 1}
	iteration := s.Iteration
	s.Iteration = p.Iteration // the retry belongs to the iteration its stage did
	m.dispatchWith(r.Stage, p.Input, next)
	s.Iteration = iteration
	return true
}
