package messages

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// RunRequest asks for a run of a finished job's generated script on new
// data: the small job that `submit run` and `submit task run` submit.
type RunRequest struct {
	FromJob string `json:"from_job"` // a job that succeeded
	// Args are the values of the job's str, int, float and bool inputs,
	// passed to the script as --name value (an argv array, never a shell).
	// Each must parse as its declared type (ParseInputValue).
	Args map[string]string `json:"args,omitempty"`
	// Samples maps a sample name of the job, or the name of one of its File
	// or Dir inputs, to an object reference in the samples object store
	// (sha256:<hex>[.ext]); a Dir input's object is a tar archive of the
	// directory. Samples not given are the job's own.
	Samples map[string]string `json:"samples,omitempty"`
	// Options are the run's settings (resources, timeout, retries, cache,
	// env_vars, secrets) over the job's; nil keeps the job's.
	Options *RunOptions `json:"options,omitempty"`
}

// Task is a named reusable task: a finished job's script, run by name
// (`submit task run NAME`) the way `submit run JOB_ID` runs it.
type Task struct {
	Name        string          `json:"name"`
	JobID       string          `json:"job_id"`
	Prompt      string          `json:"prompt,omitempty"` // the job's task, for listings
	Inputs      map[string]Type `json:"inputs,omitempty"`
	Samples     []string        `json:"samples,omitempty"` // the job's sample names
	Outputs     map[string]Type `json:"outputs,omitempty"`
	CreatedAt   time.Time       `json:"created_at"`
	Description string          `json:"description,omitempty"`
	// Defaults are the settings of every run of the task (task register's
	// options); a run's own options are laid over them (RunOptions.Over).
	Defaults *RunOptions `json:"defaults,omitempty"`
	// Owner registered the task ("nats:<user>", "http:<token name>" or
	// "admin"): only it or an admin replaces or deletes it
	// (internal/coordinator/tasks.go).
	Owner string `json:"owner,omitempty"`
}

var taskNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$`)

// ValidTaskName reports whether name can name a task: 1 to 63 letters,
// digits, '_' or '-', starting with a letter or digit.
func ValidTaskName(name string) bool { return taskNameRe.MatchString(name) }

var (
	inputIntRe   = regexp.MustCompile(`^[+-]?[0-9]+$`)
	inputFloatRe = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$`)
)

// MaxInputValue bounds a str input's value, in bytes.
const MaxInputValue = 64 << 10

// ParseInputValue checks an input value given as text against its
// declared type, strictly, and returns it in canonical form: int as a
// decimal integer that fits 64 bits; float as a finite decimal number (no
// inf, nan or hex); bool only "true" or "false"; str as given (valid UTF-8,
// no NUL byte, at most MaxInputValue bytes). File and Dir inputs are paths,
// not values: they are an error here.
func ParseInputValue(t Type, v string) (string, error) {
	switch t {
	case TypeStr:
		if strings.ContainsRune(v, 0) || !utf8.ValidString(v) {
			return "", fmt.Errorf("is not text (UTF-8 without NUL bytes)")
		}
		if len(v) > MaxInputValue {
			return "", fmt.Errorf("is longer than %d bytes", MaxInputValue)
		}
		return v, nil
	case TypeInt:
		s := strings.TrimSpace(v)
		if !inputIntRe.MatchString(s) {
			return "", fmt.Errorf("%q is not an integer", v)
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return "", fmt.Errorf("%q does not fit in 64 bits", v)
		}
		return strconv.FormatInt(n, 10), nil
	case TypeFloat:
		s := strings.TrimSpace(v)
		if !inputFloatRe.MatchString(s) {
			return "", fmt.Errorf("%q is not a decimal number", v)
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) {
			return "", fmt.Errorf("%q is out of the float64 range", v)
		}
		return strconv.FormatFloat(f, 'g', -1, 64), nil
	case TypeBool:
		switch v {
		case "true", "false":
			return v, nil
		}
		return "", fmt.Errorf("%q is not true or false", v)
	case TypeFile, TypeDir:
		return "", fmt.Errorf("a %s input is a path, not a value", t)
	}
	return "", fmt.Errorf("unsupported input type %q", t)
}

// DirManifest lists a Dir output's contents, stored in the outputs object
// store (ObjectStoreOutputs) as the object the output's value names: every
// regular file, by path relative to the directory (slash-separated), with
// its size and content hash (the object sha256:<hex> of the same store),
// and every subdirectory, so empty ones are kept. Entries are sorted by
// path, so the same directory always gives the same manifest and object.
type DirManifest struct {
	Files []ManifestFile `json:"files"`
	Dirs  []string       `json:"dirs,omitempty"`
}

// ManifestFile is a file of a DirManifest.
type ManifestFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// MaxSampleBytes bounds one sample file (or a Dir input's tar archive).
const MaxSampleBytes = 2 << 30
