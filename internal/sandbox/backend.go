package sandbox

import (
	"context"
	"errors"
	"strings"
	"time"
)

// ErrInvalidPackage is wrapped by Build errors when a package does not exist
// in the index (pip) or the distribution (apt). Use errors.As with *InvalidPackageError.
var ErrInvalidPackage = errors.New("sandbox: invalid package")

// ErrEnvNotFound is returned by Run for an Env.ID this backend has not built
// (e.g. it was built by another worker's backend): build it again.
var ErrEnvNotFound = errors.New("sandbox: environment not found")

// ErrBuildFailed is wrapped by Build errors that retrying cannot fix: the
// package installer ran and failed (a conflict, a failed compile), or the
// backend cannot provide what the spec asks for. Network and other
// infrastructure failures do not wrap it.
var ErrBuildFailed = errors.New("sandbox: build failed")

// ErrClosed is returned by a Backend after Close.
var ErrClosed = errors.New("sandbox: backend closed")

// InvalidPackageError names the packages a build could not find.
type InvalidPackageError struct {
	Packages []string
	Log      string
}

func (e *InvalidPackageError) Error() string {
	return "sandbox: invalid package(s) " + joinComma(e.Packages)
}

func (e *InvalidPackageError) Unwrap() error { return ErrInvalidPackage }

// Backend is a place to run untrusted Python: the process backend
// (bubblewrap) on one machine, the Docker backend on a fleet.
type Backend interface {
	// Name is "process" or "docker".
	Name() string
	// Build makes (or reuses) an environment with the given packages and
	// returns its reference. Identical specs give the same Env.ID.
	Build(ctx context.Context, spec EnvSpec) (Env, error)
	// Run runs one command in a fresh sandbox of the environment.
	Run(ctx context.Context, spec RunSpec) (RunResult, error)
	// Close releases the backend's resources.
	Close() error
}

// EnvSpec is the set of packages an environment needs.
type EnvSpec struct {
	Packages       []string // pip requirement names (validated PEP 508 names)
	SystemPackages []string // apt package names (docker backend only)
	// Name is the name of the job it is for (JobSpec.Name), if any: the
	// docker backend tags the image with it. It changes nothing inside.
	Name string
}

// Env is a built environment.
type Env struct {
	ID  string // image name (docker) or environment hash (process)
	Log string // build log, trimmed
	// Provenance lists what the build that made the environment fetched
	// (see Artifact); empty when it fetched nothing or was built before.
	Provenance []Artifact
}

// RunSpec describes one sandboxed run. The working directory is /workspace,
// populated with Files; Inputs are mounted read-only under /var/inputs;
// /var/outputs is empty and writable; /tmp is a size-capped tmpfs.
type RunSpec struct {
	Env     string            // Env.ID from Build
	Files   map[string][]byte // relative path under /workspace -> content
	Inputs  map[string]string // file name under /var/inputs -> host path
	Argv    []string          // e.g. ["python", "-m", "pytest", ...]; "python" is the env's interpreter
	EnvVars map[string]string // the only environment the sandbox sees (besides PATH, HOME, LANG)
	Timeout time.Duration     // wall clock; the whole process tree is killed after it (zero: 60s)
	Memory  int64             // bytes; zero: 1 GiB (DefaultMemory)
	CPUs    float64           // zero: 1
	// OutputLimit caps stdout and stderr each; the head and tail are kept. Zero: 1 MiB.
	OutputLimit int
	// Collect lists files to return after the run, relative to /workspace
	// (e.g. ".harness/junit.xml"); missing ones are left out.
	Collect []string
	// CollectOutputs returns what is under /var/outputs, within OutputCaps.
	CollectOutputs bool
	// OutputCaps bound and select what CollectOutputs reads (outputcaps.go).
	OutputCaps OutputCaps
	// Stdio, when set, talks to the command while it runs (see
	// StdioFunc): its standard output goes there instead of
	// RunResult.Stdout, and its standard input comes from there.
	Stdio StdioFunc
	// JobID is the job the run is for, if any: the docker backend labels
	// its container with it (autocoder.job) and logs it. It changes nothing
	// inside the sandbox.
	JobID string
}

// RunResult is what a run produced.
type RunResult struct {
	ExitCode   int
	TimedOut   bool
	Stdout     []byte
	Stderr     []byte
	Truncated  bool              // stdout or stderr was cut
	Files      map[string][]byte // collected workspace files
	Outputs    map[string][]byte // /var/outputs contents, by relative path ("name" or "dir/file")
	OutputDirs []string          // directories found under /var/outputs, relative
	// OutputsOmitted lists files under /var/outputs that were left out of
	// Outputs: past OutputCaps, or not regular files (symlinks, FIFOs).
	OutputsOmitted []string
	Duration       time.Duration
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

// Artifact is one thing a build fetched: a distribution pip installed
// (URL and SHA-256 from pip's report) or what flowed through the build's
// egress proxy (a plain-HTTP download with its SHA-256 and size, or a
// CONNECT tunnel as connect://host:port with its size only: the proxy
// cannot see inside TLS).
type Artifact struct {
	URL    string `json:"url"`
	SHA256 string `json:"sha256,omitempty"` // hex; empty when unknown (tunnels)
	Bytes  int64  `json:"bytes,omitempty"`  // bytes that flowed through the proxy; zero when not seen by it
}

// PythonVersioned is a Backend that says which Python its environments
// run: "3.11", the major and minor of sys.version. A sandbox worker checks
// the versions it offers (AUTOCODER_PYTHONS) with it.
type PythonVersioned interface {
	PythonVersion() string
}

// Identified is a Backend that says, in one line, what its runs run on
// beyond its name: the interpreter's full version, the base image's ID.
// Sandbox stage results are cached under it, so a worker moved to another
// interpreter or base image does not serve results computed on the old
// one (nor a fleet's workers each other's, when theirs differ).
type Identified interface {
	Identity() string
}

// MajorMinor is "3.11" of a sys.version such as "3.11.2 (main, ...)", or
// "" for anything else.
func MajorMinor(sysVersion string) string {
	v, _, _ := strings.Cut(strings.TrimSpace(sysVersion), " ")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return ""
	}
	return parts[0] + "." + parts[1]
}
