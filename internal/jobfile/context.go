package jobfile

import (
	"path/filepath"

	"github.com/autocoder/autocoder/pkg/messages"
)

// ResolveContext makes relative context paths relative to dir, as
// ResolveSamples does for samples; object references stay as they are.
func ResolveContext(spec *messages.JobSpec, dir string) {
	for i, p := range spec.Context {
		if _, isRef := messages.ParseObjectRef(p); isRef || p == "" || filepath.IsAbs(p) {
			continue
		}
		spec.Context[i] = filepath.Join(dir, p)
	}
}
