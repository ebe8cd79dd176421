package codemodestages

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/internal/codemode/pyexec"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/cache"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Config configures Handlers. The zero value is ready to use: stages
// whose part is missing fail permanently, saying what is missing.
type Config struct {
	// Model is the chat model of codemode_turn; nil fails the stage (a
	// client that cannot chat cannot do code mode).
	Model codemode.Model
	// Conn reaches the tool services of codemode_tools and codemode_exec;
	// nil fails those stages.
	Conn *nats.Conn
	// Cache keeps tool calls (content keys, scoped by the job); nil: none.
	// A job's cache mode applies: auto reads and writes, override only
	// writes, disable neither.
	Cache cache.Cache
	// CacheTTL is how long a tool call's entry is kept; 0 keeps it as
	// long as the cache does (as the stage cache's TTL).
	CacheTTL time.Duration
	// Limits bound the programs of interpreter starlark; zero fields mean
	// codemode's defaults.
	Limits codemode.Limits
	// Python runs the programs of interpreter python (the default) in the
	// sandbox; nil fails them permanently.
	Python *pyexec.Runner
	// Files keeps what Python programs write under /var/outputs (the
	// outputs object store); nil: the result lists them unstored.
	Files FileStore
	// ObservationBytes is the observation's budget; 0: the default.
	ObservationBytes int
}

// Handlers do the code-mode stages.
type Handlers struct{ cfg Config }

// New validates cfg and returns the handlers.
func New(cfg Config) (*Handlers, error) {
	if cfg.CacheTTL < 0 {
		return nil, errors.New("codemodestages: CacheTTL must not be negative")
	}
	if cfg.ObservationBytes < 0 {
		return nil, errors.New("codemodestages: ObservationBytes must not be negative")
	}
	return &Handlers{cfg: cfg}, nil
}

// Register puts the code-mode stages on mux. Each worker's executor serves
// the ones of its pool: codemode_turn on the llm-workers, codemode_tools
// and codemode_exec on the sandbox-workers. A Python program's run depends
// on the sandbox backend and the prelude (stagework.DependsOn).
func (h *Handlers) Register(mux *stagework.Mux) {
	stagework.Register(mux, messages.StageCodeModeTurn, h.turn)
	stagework.Register(mux, messages.StageCodeModeTools, h.describe)
	stagework.Register(mux, messages.StageCodeModeExec, h.exec, h.execDeps()...)
}

// execDeps are what shapes codemode_exec's output besides its code: the
// backend Python programs run in and the prelude's text.
func (h *Handlers) execDeps() []stagework.Option {
	if h.cfg.Python == nil || h.cfg.Python.Backend == nil {
		return nil
	}
	sum := sha256.Sum256([]byte(pyexec.Prelude()))
	return []stagework.Option{stagework.DependsOn("backend", h.cfg.Python.Backend.Name()),
		stagework.DependsOn("prelude", hex.EncodeToString(sum[:6]))}
}
