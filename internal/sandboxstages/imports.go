package sandboxstages

import (
	"context"
	"fmt"

	"github.com/autocoder/autocoder/internal/pyscan"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

// checkImports is the code runner's check before a run (as the
// reference's code_runner does first): the script's imports are looked up
// in its sandbox, and missing ones end the stage with an environment
// diagnosis (missing is true) instead of a crash the model would read as
// its own mistake.
func (h *Handlers) checkImports(ctx context.Context, cmd *messages.StageCommand, image, code string) (stagework.Output[messages.AcceptanceOutput], bool, error) {
	// Within this worker's ceilings, as every run of the job is.
	l := h.limits(cmd.JobID, cmd.Stage, messages.Duration(sandbox.ImportCheckTimeout), messages.Resources{})
	mods, err := sandbox.CheckImports(ctx, h.backend, sandbox.RunSpec{Env: image, JobID: cmd.JobID, Timeout: l.timeout,
		Memory: l.memory, CPUs: l.cpus}, code)
	if err != nil {
		return stagework.Output[messages.AcceptanceOutput]{}, false, fmt.Errorf("check imports: %w", err)
	}
	if len(mods) == 0 {
		return stagework.Output[messages.AcceptanceOutput]{}, false, nil
	}
	missing := make([]messages.MissingModule, len(mods))
	for i, m := range mods {
		pkg, ok := pyscan.Distribution(m)
		if !ok {
			pkg = m
		}
		missing[i] = messages.MissingModule{Module: m, Package: pkg}
	}
	out := messages.AcceptanceOutput{ExitCode: 1, MissingModules: missing,
		Problems: []string{sandbox.MissingModulesProblem(missing)}}
	out.Output = out.Problems[0]
	return stagework.Output[messages.AcceptanceOutput]{Value: out}, true, nil
}
