package llmstages

import (
	"context"
	"strings"

	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/cache"
	"github.com/autocoder/autocoder/pkg/messages"
)

// FailedRunChecker tells whether code was already tested with tests and
// failed in an environment with every package of env: the negative cache
// the sandbox-worker fills (cache.FailedRuns).
type FailedRunChecker interface {
	Failed(ctx context.Context, code, tests string, env cache.RunEnv) (bool, error)
}

// repeatedFixPrompt is what the model hears when its fix is code that
// already failed these tests.
const repeatedFixPrompt = "That code was already tested with these tests and failed (it is the code of an earlier attempt), " +
	"so it is not a fix. Write a different fix that addresses the failures above; reply in the same format."

// avoidFailedFix checks the fix in out against the negative cache: a fix
// that goes back to code already tested with these tests and failed (code
// A failed, its fix B failed, B's fix is A again) is sent
// back to the model once, in the same conversation, and the second answer
// is the stage's. The loop never tests a known failure again on this
// worker's word; if the model insists, the machine's stuck detection
// takes over. A cache that cannot answer costs the check, never the stage.
func (h *Handlers) avoidFailedFix(ctx context.Context, cmd *messages.StageCommand, in messages.FixInput, out stagework.Output[solutionWithContext]) (stagework.Output[solutionWithContext], error) {
	s, use := out.Value.Solution, out.Value.Context
	if h.cfg.FailedRuns == nil || cmd.Cache != "" && cmd.Cache != messages.CacheAuto {
		return out, nil // cache: override and disable read nothing from the cache, this included
	}
	if strings.TrimSpace(s.Code) == strings.TrimSpace(in.Code) {
		// Unchanged code is the machine's to catch: its mechanical check
		// asks again with escalating instructions.
		return out, nil
	}
	// The next run has at least the packages of the last one and those the
	// fix declares: code that failed without one of them is worth a run.
	env := cache.RunEnv{Packages: protocol.CanonicalNames(append(append([]string(nil), in.Packages...), s.Packages...)),
		SystemPackages: protocol.CanonicalNames(s.SystemPackages)}
	failed, err := h.cfg.FailedRuns.Failed(ctx, s.Code, in.Tests, env)
	if err != nil {
		h.log.WarnContext(ctx, "negative cache not checked", "job_id", cmd.JobID, "stage", cmd.Stage, "err", err)
		return out, nil
	}
	if !failed {
		return out, nil
	}
	msgs := make([]messages.ChatMessage, 0, len(out.Messages)+1)
	for _, m := range out.Messages {
		msgs = append(msgs, messages.ChatMessage{Role: m.Role, Content: m.Content})
	}
	msgs = append(msgs, messages.ChatMessage{Role: "user", Content: repeatedFixPrompt})
	// The conversation carries the job's system prompt settings already:
	// the second call must not apply them again.
	plain := *cmd
	if cmd.Settings != nil {
		st := *cmd.Settings
		st.SystemPrompt, st.SystemPromptPrefix = "", ""
		plain.Settings = &st
	}
	again, err := h.solution(ctx, &plain, msgs, in.Packages, use)
	again.Usage = again.Usage.Add(out.Usage)
	if err != nil {
		return again, err
	}
	again.Notes = append(append(out.Notes, "the fix proposed code already tested with these tests and failed; asked for a different one"), again.Notes...)
	return again, nil
}
