package messages

import (
	"fmt"
	"regexp"
	"slices"
)

// The stage table is the one definition of every stage: a row names the
// stage, the worker pool that does it, its deadline class, whether its
// results are cached, and its version. Every list of stages, pool lookup
// and deadline default is derived from it; a new stage is a new row here
// (docs/adding-a-stage.md). The table is a value: a test extends it with
// stages of its own (StageTable.With) without touching this one.

// Pool is a worker pool: the workers that share one stage stream and its
// durable consumer. Its name is a subject token and part of the stream and
// consumer names (internal/bus).
type Pool string

// The worker pools.
const (
	PoolLLM     Pool = "llm"
	PoolSandbox Pool = "sandbox"
)

// Pools lists the worker pools; each has a stage stream and a result stream.
func Pools() []Pool { return []Pool{PoolLLM, PoolSandbox} }

// DeadlineClass says how long a dispatched stage may stay pending before
// the coordinator fails it; the coordinator gives each class its duration
// (coordinator.StageDeadline), and AUTOCODER_STAGE_DEADLINES overrides a
// stage's.
type DeadlineClass string

const (
	// DeadlineStep: a model call or a short sandbox step (10 minutes).
	DeadlineStep DeadlineClass = "step"
	// DeadlineBuild: an environment build (30 minutes).
	DeadlineBuild DeadlineClass = "build"
	// DeadlineRun: a run of the script or its tests: the job's
	// options.timeout, plus a build's deadline, since the run may first
	// build an environment its worker lacks.
	DeadlineRun DeadlineClass = "run"
)

// StageRow is one stage's facts.
type StageRow struct {
	Stage    Stage
	Pool     Pool
	Deadline DeadlineClass
	// Cached: the stage's results are kept in the content-addressed cache,
	// and an identical command (same stage, version, model and input) is
	// answered from it.
	Cached bool
	// Version is the stage's own version: bump it when what the stage
	// computes from the same input changes, so cached results of the old
	// code are not served. The worker's cache key holds it with the
	// versions of what the stage's handler depends on (prompts, reply
	// schemas, the sandbox backend: internal/stagework, Versioned).
	Version int
}

// StageTable is a set of stage rows, in order. The zero value has no
// stages; DefaultStages is autocoder's.
type StageTable struct {
	rows  []StageRow
	index map[Stage]int
}

// defaultStages are autocoder's stages, the LLM stages first. A row that
// does not validate is a bug every test run finds: the package does not
// load.
var defaultStages = mustStageTable(
	StageRow{StagePlan, PoolLLM, DeadlineStep, true, 1},
	StageRow{StageCode, PoolLLM, DeadlineStep, true, 1},
	StageRow{StageTests, PoolLLM, DeadlineStep, true, 1},
	StageRow{StagePackages, PoolLLM, DeadlineStep, true, 1},
	StageRow{StageDiagnose, PoolLLM, DeadlineStep, true, 1},
	StageRow{StageFix, PoolLLM, DeadlineStep, true, 1},
	StageRow{StagePatchTests, PoolLLM, DeadlineStep, true, 1},
	StageRow{StageVerify, PoolLLM, DeadlineStep, true, 1},
	StageRow{StageConstraint, PoolLLM, DeadlineStep, true, 1},
	StageRow{StagePackageReplacement, PoolLLM, DeadlineStep, true, 1},
	StageRow{StageAgentTurn, PoolLLM, DeadlineStep, true, 1},
	StageRow{StageCodeModeTurn, PoolLLM, DeadlineStep, true, 2},
	StageRow{StageProfile, PoolSandbox, DeadlineStep, true, 1},
	StageRow{StageBuild, PoolSandbox, DeadlineBuild, true, 1},
	StageRow{StageRunTests, PoolSandbox, DeadlineRun, true, 1},
	StageRow{StageAcceptance, PoolSandbox, DeadlineRun, true, 1},
	StageRow{StageRun, PoolSandbox, DeadlineRun, true, 1},
	StageRow{StageAgentTool, PoolSandbox, DeadlineRun, true, 1},
	StageRow{StageCodeModeTools, PoolSandbox, DeadlineStep, true, 2},
	StageRow{StageCodeModeExec, PoolSandbox, DeadlineStep, true, 2},
)

// DefaultStages is autocoder's stage table.
func DefaultStages() StageTable { return defaultStages }

// NewStageTable checks rows and returns them as a table: each stage once,
// with a name that is a subject token, a known pool and deadline class,
// and a version of at least 1.
func NewStageTable(rows ...StageRow) (StageTable, error) {
	t := StageTable{rows: slices.Clone(rows), index: make(map[Stage]int, len(rows))}
	for i, r := range rows {
		if err := r.validate(); err != nil {
			return StageTable{}, err
		}
		if _, dup := t.index[r.Stage]; dup {
			return StageTable{}, fmt.Errorf("messages: stage %q has two rows", r.Stage)
		}
		t.index[r.Stage] = i
	}
	return t, nil
}

func mustStageTable(rows ...StageRow) StageTable {
	t, err := NewStageTable(rows...)
	if err != nil {
		panic(err)
	}
	return t
}

func (r StageRow) validate() error {
	switch {
	case !stageNameRe.MatchString(string(r.Stage)):
		return fmt.Errorf("messages: stage name %q is not lower_snake_case", r.Stage)
	case !slices.Contains(Pools(), r.Pool):
		return fmt.Errorf("messages: stage %s: pool %q is not one of %v", r.Stage, r.Pool, Pools())
	case !slices.Contains([]DeadlineClass{DeadlineStep, DeadlineBuild, DeadlineRun}, r.Deadline):
		return fmt.Errorf("messages: stage %s: deadline class %q is not step, build or run", r.Stage, r.Deadline)
	case r.Version < 1:
		return fmt.Errorf("messages: stage %s: version %d is below 1", r.Stage, r.Version)
	}
	return nil
}

// With returns a new table with rows added after t's; t is unchanged.
func (t StageTable) With(rows ...StageRow) (StageTable, error) {
	return NewStageTable(append(slices.Clone(t.rows), rows...)...)
}

// Row returns the row of stage s.
func (t StageTable) Row(s Stage) (StageRow, bool) {
	i, ok := t.index[s]
	if !ok {
		return StageRow{}, false
	}
	return t.rows[i], true
}

// Rows returns every row, in the table's order.
func (t StageTable) Rows() []StageRow { return slices.Clone(t.rows) }

// Stages lists every stage, in the table's order.
func (t StageTable) Stages() []Stage {
	out := make([]Stage, len(t.rows))
	for i, r := range t.rows {
		out[i] = r.Stage
	}
	return out
}

// Pool is the pool that does stage s; "" for a stage not in the table.
func (t StageTable) Pool(s Stage) Pool {
	r, _ := t.Row(s)
	return r.Pool
}

// Len is the number of stages; 0 for the zero table.
func (t StageTable) Len() int { return len(t.rows) }

// stageNameRe is a stage name: a subject token, in lower_snake_case.
var stageNameRe = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
