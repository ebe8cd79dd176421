package sandboxstages

import (
	"context"

	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/pkg/cache"

	"github.com/autocoder/autocoder/pkg/messages"
)

// FailedRunRecorder remembers the (code, tests) pairs whose test run
// failed, with the packages it ran with: the negative cache the fix stage
// checks (cache.FailedRuns).
type FailedRunRecorder interface {
	Remember(ctx context.Context, code, tests string, env cache.RunEnv) error
}

// rememberFailure records a failing run that follows from its code and
// tests alone (not one cut short by a timeout or a kill, which says as
// much about the machine's load). A job with cache: disable leaves no
// trace in the cache, this one included. A cache that is down costs the
// negative cache one entry, never the stage.
func (h *Handlers) rememberFailure(ctx context.Context, cmd *messages.StageCommand, in messages.RunTestsInput, rep messages.TestReport) {
	if h.failedRuns == nil || rep.OK() || !rep.Hermetic() || cmd.Cache == messages.CacheDisable {
		return
	}
	if err := h.failedRuns.Remember(ctx, in.Code, in.Tests, cache.RunEnv{Packages: protocol.CanonicalNames(in.Env.Packages), SystemPackages: protocol.CanonicalNames(in.Env.SystemPackages)}); err != nil {
		h.log.Warn("failing run not remembered", "job_id", cmd.JobID, "err", err)
	}
}
