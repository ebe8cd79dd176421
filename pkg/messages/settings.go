package messages

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// The per-job settings of the model and the sandbox (issue 22), beside
// the other Options, and the settings of a run of a finished job's script
// (RunOptions). docs/settings.md maps each to the reference's.

// Bounds of the settings.
const (
	MaxTemperature     = 2.0
	MaxOutputTokens    = 1 << 20
	MaxSystemPrompt    = 64 << 10 // bytes of system_prompt, and of system_prompt_prefix
	MaxEnvVars         = 64
	MaxEnvValue        = 32 << 10 // bytes of one env_vars value
	MaxEnvBytes        = 256 << 10
	MaxSecrets         = 32
	MaxSandboxRetries  = 10
	MaxModelNameLength = 128
)

// DefaultMemory is the memory of a sandbox run when the job names none:
// the reference's 1 GiB, so work that fits there fits here.
const DefaultMemory = "1Gi"

var (
	modelNameRe   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$`)
	envNameRe     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	pythonVerRe   = regexp.MustCompile(`^3\.[0-9]{1,2}$`)
	envNamesFixed = []string{"PATH", "HOME", "PWD", "USER", "SHELL", "TMPDIR", "LANG"}
)

// CheckEnvName reports what is wrong with the name of an environment
// variable or a secret, "" when nothing: a shell identifier, and not one
// the sandbox sets itself or one that changes how Python or the loader
// start (PATH, HOME, LD_*, PYTHON*, AUTOCODER_*).
func CheckEnvName(name string) string {
	upper := strings.ToUpper(name)
	switch {
	case !envNameRe.MatchString(name):
		return "must be a variable name: a letter or '_', then letters, digits or '_' (at most 128)"
	case slices.Contains(envNamesFixed, upper):
		return "is set by the sandbox itself"
	case strings.HasPrefix(upper, "LD_"), strings.HasPrefix(upper, "PYTHON"), strings.HasPrefix(upper, "AUTOCODER_"):
		return "would change how the interpreter or the loader start (LD_*, PYTHON* and AUTOCODER_* are refused)"
	}
	return ""
}

// validateEnv checks env_vars and secrets at prefix ("options").
func validateEnv(prefix string, env map[string]string, secrets []string) error {
	if len(env) > MaxEnvVars {
		return &FieldError{prefix + ".env_vars", fmt.Sprintf("has %d variables, more than %d", len(env), MaxEnvVars)}
	}
	total := 0
	for _, name := range slices.Sorted(maps.Keys(env)) {
		field := prefix + ".env_vars." + name
		if msg := CheckEnvName(name); msg != "" {
			return &FieldError{field, msg}
		}
		v := env[name]
		if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
			return &FieldError{field, "is not text (UTF-8 without NUL bytes)"}
		}
		if len(v) > MaxEnvValue {
			return &FieldError{field, fmt.Sprintf("is longer than %s", FormatBytes(MaxEnvValue))}
		}
		total += len(name) + len(v)
	}
	if total > MaxEnvBytes {
		return &FieldError{prefix + ".env_vars", fmt.Sprintf("hold more than %s", FormatBytes(MaxEnvBytes))}
	}
	if len(secrets) > MaxSecrets {
		return &FieldError{prefix + ".secrets", fmt.Sprintf("names %d secrets, more than %d", len(secrets), MaxSecrets)}
	}
	seen := map[string]bool{}
	for i, name := range secrets {
		field := fmt.Sprintf("%s.secrets[%d]", prefix, i)
		if msg := CheckEnvName(name); msg != "" {
			return &FieldError{field, msg}
		}
		if seen[name] {
			return &FieldError{field, fmt.Sprintf("%s is named twice", name)}
		}
		if _, ok := env[name]; ok {
			return &FieldError{field, fmt.Sprintf("%s is also in env_vars: a variable is a secret or a plain value, not both", name)}
		}
		seen[name] = true
	}
	return nil
}

// ValidModelName reports whether name can name a model: 1 to
// MaxModelNameLength letters, digits and ._:/@+-, starting with a letter
// or digit.
func ValidModelName(name string) bool {
	return len(name) <= MaxModelNameLength && modelNameRe.MatchString(name)
}

// validateModel checks the model settings.
func (o *Options) validateModel() error {
	if o.Model != "" && !ValidModelName(o.Model) {
		return &FieldError{"options.model", "must be a model name from the operator's model table (letters, digits and ._:/@+-)"}
	}
	if t := o.Temperature; t != nil && (math.IsNaN(*t) || *t < 0 || *t > MaxTemperature) {
		return &FieldError{"options.temperature", fmt.Sprintf("must be between 0 and %g", MaxTemperature)}
	}
	if p := o.TopP; p != nil && (math.IsNaN(*p) || *p <= 0 || *p > 1) {
		return &FieldError{"options.top_p", "must be above 0 and at most 1"}
	}
	if o.MaxTokens < 0 || o.MaxTokens > MaxOutputTokens {
		return &FieldError{"options.max_tokens", fmt.Sprintf("must be between 1 and %d", MaxOutputTokens)}
	}
	for _, f := range []struct{ name, v string }{{"system_prompt", o.SystemPrompt}, {"system_prompt_prefix", o.SystemPromptPrefix}} {
		if !utf8.ValidString(f.v) || strings.ContainsRune(f.v, 0) {
			return &FieldError{"options." + f.name, "is not text (UTF-8 without NUL bytes)"}
		}
		if len(f.v) > MaxSystemPrompt {
			return &FieldError{"options." + f.name, fmt.Sprintf("is longer than %s", FormatBytes(MaxSystemPrompt))}
		}
	}
	return nil
}

// validateSandbox checks the sandbox settings.
func (o *Options) validateSandbox() error {
	if o.Python != "" && !pythonVerRe.MatchString(o.Python) {
		return &FieldError{"options.python", fmt.Sprintf("%q is not a Python version (want e.g. 3.11)", o.Python)}
	}
	if o.SandboxRetries < 0 || o.SandboxRetries > MaxSandboxRetries {
		return &FieldError{"options.sandbox_retries", fmt.Sprintf("must be between 0 and %d", MaxSandboxRetries)}
	}
	return validateEnv("options", o.EnvVars, o.Secrets)
}

// RunOptions are the settings of a run of a finished job's script
// (`submit run`, `submit task run`, the reference's result.run(...) and
// as_task(...)): on a RunRequest, a TaskRunRequest, and a Task as its
// defaults. A field left at its zero value keeps what the job (or the
// task) has; env_vars are added to the job's (a name given again takes
// the new value) and secrets to the job's.
type RunOptions struct {
	Resources Resources `json:"resources,omitempty"`
	Timeout   Duration  `json:"timeout,omitempty"`
	// Retries of the run after an infrastructure failure (the sandbox,
	// never a script that fails); nil keeps the job's sandbox_retries.
	Retries *int              `json:"retries,omitempty"`
	Cache   CacheMode         `json:"cache,omitempty"`
	EnvVars map[string]string `json:"env_vars,omitempty"`
	Secrets []string          `json:"secrets,omitempty"`
}

// Validate checks the options; fields are named as "options.<field>".
func (r *RunOptions) Validate() error {
	o := Options{Timeout: r.Timeout, Resources: r.Resources, Cache: r.Cache, EnvVars: r.EnvVars, Secrets: r.Secrets}
	if r.Retries != nil {
		if *r.Retries < 0 || *r.Retries > MaxSandboxRetries {
			return &FieldError{"options.retries", fmt.Sprintf("must be between 0 and %d", MaxSandboxRetries)}
		}
	}
	if err := o.validateRun(); err != nil {
		return err
	}
	if err := o.validateChoices(); err != nil {
		return err
	}
	return validateEnv("options", r.EnvVars, r.Secrets)
}

// IsZero reports whether the options change nothing.
func (r *RunOptions) IsZero() bool {
	return r == nil || (r.Resources == Resources{} && r.Timeout == 0 && r.Retries == nil && r.Cache == "" &&
		len(r.EnvVars) == 0 && len(r.Secrets) == 0)
}

// Over returns r laid over base (a task's defaults): r's fields where it
// sets them, base's elsewhere; env_vars merged (r's win), secrets joined.
// Either may be nil; the result is nil when both change nothing.
func (r *RunOptions) Over(base *RunOptions) *RunOptions {
	if base.IsZero() && r.IsZero() {
		return nil
	}
	out := RunOptions{}
	if base != nil {
		out = *base
	}
	if r == nil {
		return &out
	}
	if r.Resources.CPU != 0 {
		out.Resources.CPU = r.Resources.CPU
	}
	if r.Resources.Memory != "" {
		out.Resources.Memory = r.Resources.Memory
	}
	if r.Timeout != 0 {
		out.Timeout = r.Timeout
	}
	if r.Retries != nil {
		out.Retries = r.Retries
	}
	if r.Cache != "" {
		out.Cache = r.Cache
	}
	out.EnvVars, out.Secrets = layerEnv(out.EnvVars, out.Secrets, r.EnvVars, r.Secrets)
	return &out
}

// ApplyTo sets the options on a job's options, for its run.
func (r *RunOptions) ApplyTo(o *Options) {
	if r == nil {
		return
	}
	if r.Resources.CPU != 0 {
		o.Resources.CPU = r.Resources.CPU
	}
	if r.Resources.Memory != "" {
		o.Resources.Memory = r.Resources.Memory
	}
	if r.Timeout != 0 {
		o.Timeout = r.Timeout
	}
	if r.Retries != nil {
		o.SandboxRetries = *r.Retries
	}
	if r.Cache != "" {
		o.Cache = r.Cache
	}
	o.EnvVars, o.Secrets = layerEnv(o.EnvVars, o.Secrets, r.EnvVars, r.Secrets)
}

// layerEnv lays a run's env_vars and secrets over those below it (a job's,
// or a task's defaults): a name the run gives is the run's, in the run's
// kind. A secret of the run wins over a plain value below it, and a plain
// value of the run over a secret below it; a name in both kinds would be
// refused.
func layerEnv(env map[string]string, secrets []string, runEnv map[string]string, runSecrets []string) (map[string]string, []string) {
	env = mergeEnv(env, runEnv) // a copy: the layer below is not changed
	secrets = joinNames(secrets, runSecrets)
	for name := range env {
		if slices.Contains(runSecrets, name) {
			delete(env, name)
		}
	}
	secrets = slices.DeleteFunc(secrets, func(name string) bool {
		_, plain := runEnv[name]
		return plain
	})
	if len(env) == 0 {
		env = nil
	}
	if len(secrets) == 0 {
		secrets = nil
	}
	return env, secrets
}

func mergeEnv(base, over map[string]string) map[string]string {
	if len(base)+len(over) == 0 {
		return nil
	}
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, over)
	return out
}

func joinNames(base, more []string) []string {
	out := slices.Clone(base)
	for _, n := range more {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// StageSettings are the per-job settings that go with a stage command:
// the model's on a model stage, the sandbox's on a sandbox stage.
type StageSettings struct {
	Temperature        *float64 `json:"temperature,omitempty"`
	MaxTokens          int      `json:"max_tokens,omitempty"`
	TopP               *float64 `json:"top_p,omitempty"`
	Seed               *int64   `json:"seed,omitempty"`
	SystemPrompt       string   `json:"system_prompt,omitempty"`
	SystemPromptPrefix string   `json:"system_prompt_prefix,omitempty"`

	EnvVars map[string]string `json:"env_vars,omitempty"`
	Secrets []string          `json:"secrets,omitempty"` // names only: the worker has the values
	Python  string            `json:"python,omitempty"`
}

// SettingsFor are the settings of o a stage of pool needs: nil when the
// job has none, so a command without settings is what it was before they
// existed (and keeps its cache key).
func SettingsFor(pool Pool, o *Options) *StageSettings {
	var s StageSettings
	if pool == PoolLLM {
		// Python too: the model writes for the job's interpreter (a 3.9 job
		// gets no match statement), and a reply for one version is not
		// cached for another.
		s = StageSettings{Temperature: o.Temperature, MaxTokens: o.MaxTokens, TopP: o.TopP, Seed: o.Seed,
			SystemPrompt: o.SystemPrompt, SystemPromptPrefix: o.SystemPromptPrefix, Python: o.Python}
	} else {
		s = StageSettings{EnvVars: o.EnvVars, Secrets: o.Secrets, Python: o.Python}
	}
	if s.Temperature == nil && s.TopP == nil && s.Seed == nil && s.MaxTokens == 0 && s.SystemPrompt == "" &&
		s.SystemPromptPrefix == "" && len(s.EnvVars) == 0 && len(s.Secrets) == 0 && s.Python == "" {
		return nil
	}
	return &s
}
