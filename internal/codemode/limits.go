package codemode

import "time"

// Limits bound one run. The zero value of each field means its default.
type Limits struct {
	// MaxSteps is the Starlark execution-step budget. Default 10,000,000.
	MaxSteps uint64
	// WallTime bounds the run, tool calls included. Default 30s.
	WallTime time.Duration
	// MaxAllocBytes is the budget for what the program builds: every
	// call, operator and execution step is charged (see memory.go).
	// Default 128 MiB, which with no other allocation allows about 8.4
	// million steps (16 bytes each).
	MaxAllocBytes int64
	// MaxOutputBytes caps what print() keeps. Default 16 KiB.
	MaxOutputBytes int
	// MaxParallel bounds the tool calls parallel_map runs at once.
	// Default 8.
	MaxParallel int
	// MaxToolCalls bounds the tool calls of one run (parallel_map's
	// count before any starts). Default 200, as a Python program's.
	MaxToolCalls int
}

// Defaults for Limits.
const (
	DefaultMaxSteps       = 10_000_000
	DefaultWallTime       = 30 * time.Second
	DefaultMaxAllocBytes  = 128 << 20
	DefaultMaxOutputBytes = 16 << 10
	DefaultMaxParallel    = 8
	DefaultMaxToolCalls   = 200
)

func (l Limits) withDefaults() Limits {
	if l.MaxSteps == 0 {
		l.MaxSteps = DefaultMaxSteps
	}
	if l.WallTime <= 0 {
		l.WallTime = DefaultWallTime
	}
	if l.MaxAllocBytes <= 0 {
		l.MaxAllocBytes = DefaultMaxAllocBytes
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if l.MaxParallel <= 0 {
		l.MaxParallel = DefaultMaxParallel
	}
	if l.MaxToolCalls <= 0 {
		l.MaxToolCalls = DefaultMaxToolCalls
	}
	return l
}
