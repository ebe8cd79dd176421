package codemodestages

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/internal/trim"
	"github.com/autocoder/autocoder/pkg/messages"
)

func (h *Handlers) tools(ctx context.Context, names []string) (*codemode.Registry, error) {
	if h.cfg.Conn == nil {
		return nil, bus.Permanent(errors.New("codemode: this sandbox-worker has no NATS connection for tools"))
	}
	reg, err := codemode.DiscoverToolRefs(ctx, h.cfg.Conn, names)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err // cancelled: the executor retries or drops it
		}
		return nil, bus.Permanent(err)
	}
	return reg, nil
}

func (h *Handlers) describe(ctx context.Context, _ *messages.StageCommand, in messages.CodeModeToolsInput) (stagework.Output[messages.CodeModeToolsOutput], error) {
	var none stagework.Output[messages.CodeModeToolsOutput]
	reg, err := h.tools(ctx, in.Tools)
	if err != nil {
		return none, err
	}
	desc, err := reg.ToolDescriptions()
	if err != nil {
		return none, bus.Permanent(err)
	}
	return stagework.Output[messages.CodeModeToolsOutput]{Value: messages.CodeModeToolsOutput{Descriptions: desc}}, nil
}

// maxErrorBytes bounds a failed program's error on the stage's result.
const maxErrorBytes = 4 << 10

func (h *Handlers) exec(ctx context.Context, cmd *messages.StageCommand, in messages.CodeModeExecInput) (stagework.Output[messages.CodeModeExecOutput], error) {
	var none stagework.Output[messages.CodeModeExecOutput]
	reg, err := h.tools(ctx, in.Tools)
	if err != nil {
		return none, err
	}
	var uncacheable atomic.Bool
	reg = markUncacheable(reg, &uncacheable)
	if h.cfg.Cache != nil {
		switch cmd.Cache {
		case messages.CacheDisable:
		case messages.CacheOverride: // recompute, then write
			reg = codemode.RefreshedTools(reg, h.cfg.Cache, in.Scope, h.cfg.CacheTTL)
		default: // auto
			reg = codemode.CachedTools(reg, h.cfg.Cache, in.Scope, h.cfg.CacheTTL)
		}
	}
	res, files, runErr := h.run(ctx, in, reg)
	if runErr != nil && ctx.Err() != nil {
		return none, fmt.Errorf("codemode_exec: %w", ctx.Err()) // the worker is stopping: run again elsewhere
	}
	var ce *codemode.Error
	if runErr != nil && !errors.As(runErr, &ce) {
		return none, fmt.Errorf("codemode_exec: %w", runErr) // the sandbox's failure: try again
	}
	out := messages.CodeModeExecOutput{OK: runErr == nil, Output: res.Output, Files: files,
		Observation: codemode.Observation(res, runErr, h.cfg.ObservationBytes), Uncacheable: uncacheable.Load()}
	if runErr != nil {
		// The program's error may carry megabytes (an exception holding a
		// tool's result; Starlark's fail): it goes into events and the job.
		out.Error = trim.HeadTail(runErr.Error(), maxErrorBytes)
		out.ErrorKind = string(ce.Kind)
	} else {
		out.Value = codemode.MarshalValue(res.Value)
	}
	return stagework.Output[messages.CodeModeExecOutput]{Value: out}, nil
}

// markUncacheable wraps the NoCache tools of reg to set flag when called.
func markUncacheable(reg *codemode.Registry, flag *atomic.Bool) *codemode.Registry {
	out := codemode.NewRegistry()
	for _, name := range reg.Names() {
		t, _ := reg.Tool(name)
		if t.NoCache {
			f := t.Func
			t.Func = func(ctx context.Context, args map[string]any) (any, error) {
				flag.Store(true)
				return f(ctx, args)
			}
		}
		out.MustRegister(t)
	}
	return out
}
