package machine

import "github.com/autocoder/autocoder/pkg/messages"

// cancel finishes a running job on request: failed, with who asked, when
// and why on its state and result. The stages in flight become stale (the
// coordinator tells their workers to stop them).
func (m *Stepper) cancel(in Input) {
	by, msg := in.By, "cancelled"
	if by == "" {
		by = "unspecified" // a cancellation from inside (Coordinator.Cancel) names nobody
	} else {
		msg += " by " + by
	}
	m.s.Cancelled = &messages.Cancellation{By: by, At: in.Time, Reason: in.Reason}
	if in.Reason != "" {
		msg += ": " + in.Reason
	}
	m.Finish(messages.StatusFailed, msg)
}
