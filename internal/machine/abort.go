package machine

import "github.com/autocoder/autocoder/pkg/messages"

// abort finishes a running job as failed with the coordinator's reason:
// what it does when the job cannot go on, such as a step whose state
// would not fit its stored bound (coordinator/statebound.go). Unlike a
// cancellation nobody asked for it, so the result names no canceller.
func (m *Stepper) abort(in Input) {
	reason := in.Reason
	if reason == "" {
		reason = "aborted by the coordinator"
	}
	m.Finish(messages.StatusFailed, reason)
}
