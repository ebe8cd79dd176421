package pyexec

import (
	"time"

	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/internal/sandbox"
)

// Limits bound one Python run. The zero value of each field means its
// default. The sandbox enforces memory, CPU, processes and wall time; the
// bridge enforces the rest, whatever the program writes on it.
type Limits struct {
	// WallTime bounds the run, the interpreter's start and tool calls
	// included. Default 30s.
	WallTime time.Duration
	// Memory is the sandbox's memory limit (cgroup and address space).
	// Default 256 MiB.
	Memory int64
	// CPUs is the sandbox's CPU quota. Default 1.
	CPUs float64
	// MaxOutputBytes caps what the program prints (stdout and stderr
	// together). Default 16 KiB.
	MaxOutputBytes int
	// MaxToolCalls bounds the tool calls of one run. Default 200.
	MaxToolCalls int
	// MaxArgBytes bounds one call's arguments, as JSON. Default 64 KiB.
	MaxArgBytes int
	// MaxResultBytes bounds one call's result, as JSON. Default 1 MiB.
	MaxResultBytes int
	// MaxValueBytes bounds the last expression's value, as JSON.
	// Default 1 MiB.
	MaxValueBytes int
	// MaxParallel bounds the tool calls the worker runs at once for one
	// program (parallel_map, asyncio.gather). Default 8.
	MaxParallel int
	// Outputs bound the files the program writes under /var/outputs.
	// Default: sandbox.OutputCaps' with at most 64 files and 16 MiB.
	Outputs sandbox.OutputCaps
}

// Defaults for Limits.
const (
	DefaultWallTime       = 30 * time.Second
	DefaultMemory         = 256 << 20
	DefaultCPUs           = 1.0
	DefaultMaxOutputBytes = 16 << 10
	DefaultMaxToolCalls   = codemode.DefaultMaxToolCalls
	DefaultMaxArgBytes    = 64 << 10
	DefaultMaxResultBytes = 1 << 20
	DefaultMaxValueBytes  = 1 << 20
	DefaultMaxParallel    = 8
	DefaultMaxOutputFiles = 64
	DefaultMaxFilesBytes  = 16 << 20
)

// WithDefaults fills the zero fields.
func (l Limits) WithDefaults() Limits {
	l.WallTime = orDefault(l.WallTime, DefaultWallTime)
	l.Memory = orDefault(l.Memory, DefaultMemory)
	l.CPUs = orDefault(l.CPUs, DefaultCPUs)
	l.MaxOutputBytes = orDefault(l.MaxOutputBytes, DefaultMaxOutputBytes)
	l.MaxToolCalls = orDefault(l.MaxToolCalls, DefaultMaxToolCalls)
	l.MaxArgBytes = orDefault(l.MaxArgBytes, DefaultMaxArgBytes)
	l.MaxResultBytes = orDefault(l.MaxResultBytes, DefaultMaxResultBytes)
	l.MaxValueBytes = orDefault(l.MaxValueBytes, DefaultMaxValueBytes)
	l.MaxParallel = orDefault(l.MaxParallel, DefaultMaxParallel)
	l.Outputs.MaxFiles = orDefault(l.Outputs.MaxFiles, DefaultMaxOutputFiles)
	l.Outputs.MaxBytes = orDefault(l.Outputs.MaxBytes, DefaultMaxFilesBytes)
	return l
}

func orDefault[T int | int64 | float64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// maxLine is the longest line the bridge reads from the program: the
// largest message it may send, with room for the envelope.
func (l Limits) maxLine() int {
	return max(l.MaxArgBytes, l.MaxValueBytes, l.MaxOutputBytes) + 4<<10
}
