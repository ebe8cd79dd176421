package sandbox

import (
	"errors"
	"fmt"
	"github.com/autocoder/autocoder/internal/protocol"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Defaults of RunSpec, the same on every backend.
const (
	DefaultRunTimeout  = 60 * time.Second
	DefaultMemory      = 1 << 30 // the reference's 1 GiB (messages.DefaultMemory)
	DefaultCPUs        = 1.0
	DefaultOutputLimit = 1 << 20

	// MaxCollected caps what a run returns from /var/outputs and from
	// RunSpec.Collect, each.
	MaxCollected = 64 << 20
)

// Paths inside every sandbox (Contract 2 (docs/contracts.md)).
const (
	WorkspaceDir = "/workspace"
	InputsDir    = protocol.InputsDir
	OutputsDir   = protocol.OutputsDir
)

var envNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate checks a RunSpec before any backend acts on it: paths stay
// inside their directories, limits are sane, no NUL bytes reach argv or env.
func (s RunSpec) Validate() error {
	checks := []func() error{s.validateArgv, s.validateLimits, s.validateWorkspacePaths, s.validateInputs, s.validateEnvVars}
	for _, check := range checks {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

func (s RunSpec) validateArgv() error {
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return errors.New("sandbox: RunSpec.Argv is empty")
	}
	for _, a := range s.Argv {
		if strings.ContainsRune(a, 0) {
			return errors.New("sandbox: RunSpec.Argv contains a NUL byte")
		}
	}
	return nil
}

func (s RunSpec) validateLimits() error {
	switch {
	case s.Timeout < 0:
		return errors.New("sandbox: RunSpec.Timeout is negative")
	case s.Memory < 0 || (s.Memory > 0 && s.Memory < 16<<20):
		return errors.New("sandbox: RunSpec.Memory must be at least 16 MiB")
	case s.CPUs < 0:
		return errors.New("sandbox: RunSpec.CPUs is negative")
	case s.OutputLimit < 0:
		return errors.New("sandbox: RunSpec.OutputLimit is negative")
	}
	return nil
}

// validateWorkspacePaths checks Files and Collect: relative paths that
// stay inside /workspace.
func (s RunSpec) validateWorkspacePaths() error {
	for name := range s.Files {
		if !isWorkspacePath(name) {
			return fmt.Errorf("sandbox: RunSpec.Files: %q is not a relative path inside /workspace", name)
		}
	}
	for _, name := range s.Collect {
		if !isWorkspacePath(name) {
			return fmt.Errorf("sandbox: RunSpec.Collect: %q is not a relative path inside /workspace", name)
		}
	}
	return nil
}

func isWorkspacePath(name string) bool {
	return filepath.IsLocal(name) && !strings.ContainsRune(name, 0)
}

func (s RunSpec) validateInputs() error {
	for name, path := range s.Inputs {
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
			return fmt.Errorf("sandbox: RunSpec.Inputs: %q is not a file name", name)
		}
		if path == "" || strings.ContainsRune(path, 0) {
			return fmt.Errorf("sandbox: RunSpec.Inputs[%q]: empty host path", name)
		}
	}
	return nil
}

func (s RunSpec) validateEnvVars() error {
	for k, v := range s.EnvVars {
		if !envNameRe.MatchString(k) || strings.ContainsRune(v, 0) {
			return fmt.Errorf("sandbox: RunSpec.EnvVars: invalid variable %q", k)
		}
	}
	return nil
}

// ThreadEnv caps the thread pools of OpenBLAS, MKL, OpenMP and numexpr at
// the CPUs granted. Without it, OpenBLAS starts one thread (and buffer) per
// host core, which can exceed the memory limit on a large machine at import.
// Both backends give it to every run.
func ThreadEnv(cpus float64) map[string]string {
	n := strconv.Itoa(max(int(math.Ceil(cpus)), 1))
	return map[string]string{
		"OMP_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n, "MKL_NUM_THREADS": n, "NUMEXPR_MAX_THREADS": n,
	}
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
