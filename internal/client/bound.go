package client

import (
	"path/filepath"
	"strings"

	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/pkg/messages"
)

// checkBound refuses, before anything is uploaded or queued, a job the
// coordinator could not store (coordinator.CheckSubmission): a 900 KB
// prompt is a *messages.FieldError here, not a job that never exists.
// Sample paths are measured as the object references they will become.
func checkBound(jobID string, spec messages.JobSpec) error {
	wire := spec
	wire.Samples = make(map[string]string, len(spec.Samples))
	for name, p := range spec.Samples {
		if _, isRef := messages.ParseObjectRef(p); isRef {
			wire.Samples[name] = p
			continue
		}
		wire.Samples[name] = "sha256:" + strings.Repeat("0", 64) + filepath.Ext(p)
	}
	return coordinator.CheckSubmission(coordinator.SubmissionOf(jobID, wire, ""), 0)
}
