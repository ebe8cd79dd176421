package config

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/autocoder/autocoder/internal/modeltable"
)

// JobSettingsConfig are the operator's side of the per-job settings
// (docs/settings.md): the models jobs may name, the Python versions they
// may ask for, and where sandbox workers find the secrets they name.
type JobSettingsConfig struct {
	// ModelsFile is the model table (AUTOCODER_MODELS_FILE, internal/
	// modeltable); empty: one model, AUTOCODER_MODEL at OPENAI_BASE_URL.
	// The coordinator reads its names (to refuse an unknown model at
	// submit), the llm-worker its endpoints, keys and prices.
	ModelsFile string
	// Pythons are the Python versions the fleet offers
	// (AUTOCODER_PYTHONS), "3.11=WHERE,3.12=WHERE": on a process sandbox
	// worker WHERE is an interpreter, on a docker one a base image. The
	// coordinator reads the versions (to refuse an absent one at submit);
	// each sandbox worker checks at start that it has every one. Empty:
	// the worker's own interpreter or base image, whatever its version.
	Pythons string
	// SecretsDir is a directory of files, one per secret, named like it
	// (AUTOCODER_SECRETS_DIR): where a sandbox worker reads the values of
	// the secrets jobs name. Besides it, a variable AUTOCODER_SECRET_<NAME>
	// of the worker's environment holds secret NAME.
	SecretsDir string
}

func jobSettingsFromEnv() JobSettingsConfig {
	return JobSettingsConfig{
		ModelsFile: os.Getenv("AUTOCODER_MODELS_FILE"),
		Pythons:    os.Getenv("AUTOCODER_PYTHONS"),
		SecretsDir: os.Getenv("AUTOCODER_SECRETS_DIR"),
	}
}

func (c *JobSettingsConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.ModelsFile, "models-file", c.ModelsFile, "the model table jobs name their model from (AUTOCODER_MODELS_FILE)")
	fs.StringVar(&c.Pythons, "pythons", c.Pythons, "Python versions offered, 3.11=interpreter-or-image,... (AUTOCODER_PYTHONS)")
	fs.StringVar(&c.SecretsDir, "secrets-dir", c.SecretsDir, "sandbox-worker: a directory of secret files, one per name (AUTOCODER_SECRETS_DIR)")
}

func (c *JobSettingsConfig) validate() error {
	if c.ModelsFile != "" {
		if _, err := os.Stat(c.ModelsFile); err != nil {
			return fmt.Errorf("AUTOCODER_MODELS_FILE: %w", err)
		}
	}
	if _, err := c.PythonTable(); err != nil {
		return err
	}
	if c.SecretsDir != "" {
		if fi, err := os.Stat(c.SecretsDir); err != nil || !fi.IsDir() {
			return fmt.Errorf("AUTOCODER_SECRETS_DIR: %s is not a directory", c.SecretsDir)
		}
	}
	return nil
}

// ModelTable is the model table: the file's, read and checked with its
// keys, or else the single model of model, baseURL and key (AUTOCODER_MODEL,
// OPENAI_BASE_URL, OPENAI_API_KEY).
func (c *Config) ModelTable() (*modeltable.Table, error) {
	if c.ModelsFile == "" {
		return modeltable.Single(c.Model, c.OpenAIBaseURL, c.OpenAIAPIKey), nil
	}
	t, err := modeltable.Load(c.ModelsFile)
	if err != nil {
		return nil, fmt.Errorf("AUTOCODER_MODELS_FILE: %w", err)
	}
	return t, nil
}

// ModelNames are the names of the models jobs may name, and the default:
// what the coordinator checks a job's options.model against. It reads the
// table without its keys. Without a table file, names is nil: any model
// the one endpoint serves may be named (modeltable.Single).
func (c *Config) ModelNames() (names []string, def string, err error) {
	if c.ModelsFile == "" {
		return nil, modeltable.Single(c.Model, "", "").Default, nil
	}
	b, err := os.ReadFile(c.ModelsFile)
	if err != nil {
		return nil, "", fmt.Errorf("AUTOCODER_MODELS_FILE: %w", err)
	}
	t, err := modeltable.Parse(b)
	if err != nil {
		return nil, "", fmt.Errorf("AUTOCODER_MODELS_FILE %s: %w", c.ModelsFile, err)
	}
	return t.Names(), t.Default, nil
}

// PythonTable is AUTOCODER_PYTHONS as a map from version ("3.12") to
// where it is (an interpreter or a base image); nil when unset.
func (c *JobSettingsConfig) PythonTable() (map[string]string, error) {
	if strings.TrimSpace(c.Pythons) == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(c.Pythons, ",") {
		v, where, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || !pythonVersion(v) || strings.TrimSpace(where) == "" {
			return nil, fmt.Errorf("AUTOCODER_PYTHONS: %q is not VERSION=INTERPRETER-OR-IMAGE, e.g. 3.12=/usr/bin/python3.12", kv)
		}
		if _, dup := out[v]; dup {
			return nil, fmt.Errorf("AUTOCODER_PYTHONS: version %s is given twice", v)
		}
		out[v] = strings.TrimSpace(where)
	}
	return out, nil
}

// PythonVersions are the versions of AUTOCODER_PYTHONS, sorted; nil when unset.
func (c *JobSettingsConfig) PythonVersions() []string {
	t, _ := c.PythonTable()
	if t == nil {
		return nil
	}
	out := make([]string, 0, len(t))
	for v := range t {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

func pythonVersion(v string) bool {
	major, minor, ok := strings.Cut(v, ".")
	if major != "3" || !ok || minor == "" || len(minor) > 2 {
		return false
	}
	for _, r := range minor {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// SecretPath is where the secrets directory keeps secret name.
func (c *JobSettingsConfig) SecretPath(name string) string {
	if c.SecretsDir == "" {
		return ""
	}
	return filepath.Join(c.SecretsDir, name)
}
