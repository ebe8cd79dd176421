package machine

import "github.com/autocoder/autocoder/pkg/messages"

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
