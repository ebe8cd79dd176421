package sandbox

import (
	"fmt"
	"path"
	"strings"

	"github.com/autocoder/autocoder/pkg/messages"
)

// DefaultMaxOutputFiles is OutputCaps.MaxFiles when unset.
const DefaultMaxOutputFiles = 10_000

// OutputCaps bound what a run returns from /var/outputs (the sandbox-worker's
// AUTOCODER_MAX_OUTPUT_FILES and AUTOCODER_MAX_OUTPUT_BYTES). Zero fields
// mean the defaults. A declared output with entries past a cap fails the
// acceptance naming the output and the cap (ParseOutputs): never a Dir that
// quietly comes back with part of its files.
type OutputCaps struct {
	// Names are the declared outputs. When set, only they are read: an
	// undeclared file (scratch, a cache, a 900 MB temporary) is never read
	// and never takes a declared output's share of the caps. Empty: every
	// entry is read.
	Names []string
	// MaxFiles bounds the entries (files and directories) read. Default
	// DefaultMaxOutputFiles.
	MaxFiles int
	// MaxBytes bounds the bytes of the files read, in all. Default
	// MaxCollected (64 MiB), which is also its ceiling.
	MaxBytes int64
}

// WithDefaults fills the zero fields and holds MaxBytes to MaxCollected.
func (c OutputCaps) WithDefaults() OutputCaps {
	if c.MaxFiles <= 0 {
		c.MaxFiles = DefaultMaxOutputFiles
	}
	if c.MaxBytes <= 0 || c.MaxBytes > MaxCollected {
		c.MaxBytes = MaxCollected
	}
	return c
}

// Declared reports whether rel (a path relative to /var/outputs) is, or is
// under, a declared output; with no Names, everything is.
func (c OutputCaps) Declared(rel string) bool {
	if len(c.Names) == 0 {
		return true
	}
	top, _, _ := strings.Cut(path.Clean(rel), "/")
	for _, n := range c.Names {
		if top == n {
			return true
		}
	}
	return false
}

// String names the caps in a problem.
func (c OutputCaps) String() string {
	c = c.WithDefaults()
	return fmt.Sprintf("the output caps of %d files and %s (AUTOCODER_MAX_OUTPUT_FILES, AUTOCODER_MAX_OUTPUT_BYTES)",
		c.MaxFiles, messages.FormatBytes(c.MaxBytes))
}

// omittedUnder lists the omitted entries under the directory output name.
func omittedUnder(name string, omitted []string) []string {
	var out []string
	for _, o := range omitted {
		if strings.HasPrefix(o, name+"/") || strings.HasPrefix(o, "... (the rest of "+name) {
			out = append(out, o)
		}
	}
	return out
}
