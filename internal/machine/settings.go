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
