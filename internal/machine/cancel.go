package machine

import "github.com/autocoder/autocoder/pkg/messages"

// cancel finishes a running job on request: failed, with who asked, when
// and why on its state and result. The stages in flight become stale (the
// coordinator tells their workers to stop them).
func (m *stepper) cancel(in Input) {
	by := in.By
	if by == "" {
		by = "unknown"
	}
	m.s.Cancelled = &messages.Cancellation{By: by, At: in.Time, Reason: in.Reason}
	msg := "cancelled by " + by
	if in.Reason != "" {
		msg += ": " + in.Reason
	}
	m.finish(messages.StatusFailed, msg)
}
