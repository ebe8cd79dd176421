package codemodestages

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/nats-io/nats.go"

	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/internal/codemode/pyexec"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/cache"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Exec does codemode_tools and codemode_exec with tools discovered on Conn.
type Exec struct {
	// Conn reaches the tool services; nil fails the stages permanently.
	Conn *nats.Conn
	// Cache keeps tool calls (content keys, scoped by the job); nil: none.
	Cache cache.Cache
	// Limits bound the programs of interpreter starlark.
	Limits codemode.Limits
	// Python runs the programs of interpreter python (the default) in
	// the sandbox; nil fails them permanently.
	Python *pyexec.Runner
	// Files keeps what Python programs write under /var/outputs (the
	// outputs object store); nil: the result lists them unstored.
	Files FileStore
	// ObservationBytes is the observation's budget; 0: the default.
	ObservationBytes int
}

// Serves implements Stages.
func (*Exec) Serves() []messages.Stage {
	return []messages.Stage{messages.StageCodeModeTools, messages.StageCodeModeExec}
}

// Version implements stagework.Handler.
func (*Exec) Version(messages.Stage) string { return Version }

// Handle implements stagework.Handler.
func (e *Exec) Handle(ctx context.Context, cmd *messages.StageCommand) (stagework.Output, error) {
	switch cmd.Stage {
	case messages.StageCodeModeTools:
		var in messages.CodeModeToolsInput
		if err := decode(cmd, &in); err != nil {
			return stagework.Output{}, err
		}
		return e.describe(ctx, in)
	case messages.StageCodeModeExec:
		var in messages.CodeModeExecInput
		if err := decode(cmd, &in); err != nil {
			return stagework.Output{}, err
		}
		return e.exec(ctx, cmd, in)
	}
	return stagework.Output{}, unknownStage(cmd)
}

func (e *Exec) tools(ctx context.Context, names []string) (*codemode.Registry, error) {
	if e.Conn == nil {
		return nil, stagework.Permanent(errors.New("codemode: this sandbox-worker has no NATS connection for tools"))
	}
	reg, err := codemode.DiscoverToolRefs(ctx, e.Conn, names)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err // cancelled: the executor retries or drops it
		}
		return nil, stagework.Permanent(err)
	}
	return reg, nil
}

func (e *Exec) describe(ctx context.Context, in messages.CodeModeToolsInput) (stagework.Output, error) {
	reg, err := e.tools(ctx, in.Tools)
	if err != nil {
		return stagework.Output{}, err
	}
	desc, err := reg.ToolDescriptions()
	if err != nil {
		return stagework.Output{}, stagework.Permanent(err)
	}
	return stagework.Output{Value: messages.CodeModeToolsOutput{Descriptions: desc}}, nil
}

func (e *Exec) exec(ctx context.Context, cmd *messages.StageCommand, in messages.CodeModeExecInput) (stagework.Output, error) {
	reg, err := e.tools(ctx, in.Tools)
	if err != nil {
		return stagework.Output{}, err
	}
	var uncacheable atomic.Bool
	reg = markUncacheable(reg, &uncacheable)
	if e.Cache != nil && cmd.Cache != messages.CacheDisable {
		reg = codemode.CachedTools(reg, e.Cache, in.Scope, 0)
	}
	res, files, runErr := e.run(ctx, in, reg)
	if runErr != nil && ctx.Err() != nil {
		return stagework.Output{}, fmt.Errorf("codemode_exec: %w", ctx.Err()) // the worker is stopping: run again elsewhere
	}
	var ce *codemode.Error
	if runErr != nil && !errors.As(runErr, &ce) {
		return stagework.Output{}, fmt.Errorf("codemode_exec: %w", runErr) // the sandbox's failure: try again
	}
	out := messages.CodeModeExecOutput{OK: runErr == nil, Output: res.Output, Files: files,
		Observation: codemode.Observation(res, runErr, e.ObservationBytes), Uncacheable: uncacheable.Load()}
	if runErr != nil {
		out.Error = runErr.Error()
		out.ErrorKind = string(ce.Kind)
	} else {
		out.Value = codemode.MarshalValue(res.Value)
	}
	return stagework.Output{Value: out}, nil
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
