package sandboxstages

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"time"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Defaults of Ceilings.
const (
	DefaultMaxRunTimeout = 30 * time.Minute
	DefaultMaxMemory     = 8 << 30 // 8 GiB
)

// Ceilings are the most one sandboxed run may have, whatever its command
// asks for: the worker's own limits (AUTOCODER_MAX_RUN_TIMEOUT,
// AUTOCODER_MAX_MEMORY, AUTOCODER_MAX_CPUS). The limits in a command were
// validated when the job was submitted, but a worker believes nothing it
// can check: a command that asks for more runs at the ceiling, with a log
// line. Zero fields mean the defaults.
type Ceilings struct {
	Timeout time.Duration // wall clock per run; default DefaultMaxRunTimeout (30m)
	Memory  int64         // bytes; default DefaultMaxMemory (8 GiB)
	CPUs    float64       // cores; default the machine's (runtime.NumCPU)
	// Outputs bound what a script run returns from /var/outputs; zero
	// fields mean sandbox.OutputCaps' defaults.
	Outputs sandbox.OutputCaps
}

// withDefaults fills the zero fields.
func (c Ceilings) withDefaults() Ceilings {
	if c.Timeout <= 0 {
		c.Timeout = DefaultMaxRunTimeout
	}
	if c.Memory <= 0 {
		c.Memory = DefaultMaxMemory
	}
	if !(c.CPUs > 0) {
		c.CPUs = float64(runtime.NumCPU())
	}
	return c
}

// runLimits are what one run gets.
type runLimits struct {
	timeout time.Duration
	memory  int64
	cpus    float64
}

// limits are the run's limits: what the command asks for (its unset or
// unreadable values mean the sandbox's defaults), each at most its
// ceiling. What was cut is logged.
func (h *Handlers) limits(jobID string, stage messages.Stage, timeout messages.Duration, r messages.Resources) runLimits {
	c := h.ceilings
	asked := runLimits{timeout: timeout.Std(), cpus: r.CPU}
	if r.Memory != "" {
		mem, err := messages.ParseQuantity(r.Memory)
		if err != nil {
			h.log.Warn("unreadable memory limit; using the default", "job_id", jobID, "stage", stage, "memory", r.Memory, "err", err)
		}
		asked.memory = mem
	}
	got := runLimits{
		timeout: min(positiveOr(asked.timeout, sandbox.DefaultRunTimeout), c.Timeout),
		memory:  min(positiveOr(asked.memory, sandbox.DefaultMemory), c.Memory),
		cpus:    math.Min(cpusOr(asked.cpus), c.CPUs),
	}
	if got.timeout < asked.timeout || got.memory < asked.memory || got.cpus < asked.cpus {
		h.log.Warn("run limits over this worker's ceilings; the run gets the ceilings", "job_id", jobID, "stage", stage,
			"asked_timeout", asked.timeout, "asked_memory", asked.memory, "asked_cpus", fmtCPUs(asked.cpus),
			"timeout", got.timeout, "memory", got.memory, "cpus", fmtCPUs(got.cpus))
	}
	return got
}

func positiveOr[T time.Duration | int64](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// cpusOr is the CPUs asked for, or the default for none, a negative
// number or NaN (which compares false with everything, ceilings included).
func cpusOr(v float64) float64 {
	if v > 0 {
		return v
	}
	return sandbox.DefaultCPUs
}

// fmtCPUs keeps +Inf and NaN readable in a log line.
func fmtCPUs(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// String shows the ceilings as a log line or an error names them.
func (c Ceilings) String() string {
	return fmt.Sprintf("timeout %s, memory %d bytes, %s CPUs", c.Timeout, c.Memory, fmtCPUs(c.CPUs))
}
