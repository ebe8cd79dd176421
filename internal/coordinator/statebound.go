package coordinator

import (
	"errors"
	"fmt"

	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/pkg/messages"
)

// DefaultMaxStateBytes bounds one job's stored record (its state and
// outbox): it is one KV value, which the server refuses past its max
// payload (1 MiB by default); the margin is for the message headers.
const DefaultMaxStateBytes = 1<<20 - 16<<10

// errStateTooLarge marks a record over Config.MaxStateBytes that no input
// can be shrunk to fit.
var errStateTooLarge = errors.New("coordinator: job state too large")

// overStateLimit is what the coordinator does with a step whose record
// would be size bytes, over limit: a successful stage result that made it
// so is replaced by a failed one naming the bound, so the job goes on to a
// fix or ends with that reason instead of a state that cannot be stored
// (and a job running forever). ok is false when ev is not such a result.
func overStateLimit(ev machine.Input, size, limit int) (machine.Input, bool) {
	if ev.Kind != machine.InputStageResult || ev.Result == nil || ev.Result.Error != "" {
		return ev, false
	}
	failed := *ev.Result
	failed.Output, failed.Messages = nil, nil
	failed.ErrorKind = messages.ErrorPermanent
	failed.Error = fmt.Sprintf("the %s result makes the job state %.1f MiB, over the %s bound of one stored job (a smaller output is needed)",
		failed.Stage, float64(size)/(1<<20), messages.FormatBytes(int64(limit)))
	ev.Result = &failed
	return ev, true
}
