package modeltable

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/autocoder/autocoder/pkg/messages"
)

// MaxFileBytes bounds a model table file.
const MaxFileBytes = 1 << 20

// Table is the operator's model table: the models jobs may name, and the
// one a job gets when it names none.
type Table struct {
	// Default is the model of a job that names none; it must be in Models.
	Default string `yaml:"default" json:"default"`
	// Currency names the unit of the prices ("USD"), for people reading
	// costs; autocoder does no conversion.
	Currency string  `yaml:"currency,omitempty" json:"currency,omitempty"`
	Models   []Model `yaml:"models" json:"models"`
	// Open makes a name the table lacks go to the default model's
	// endpoint under that name, unpriced: the table of a deployment without
	// a file (Single), where any model the one endpoint serves may be named.
	Open bool `yaml:"-" json:"-"`
}

// Model is one row of the table.
type Model struct {
	// Name is what jobs call the model (options.model).
	Name string `yaml:"name" json:"name"`
	// Remote is the name the endpoint knows the model by; empty: Name.
	Remote string `yaml:"remote,omitempty" json:"remote,omitempty"`
	// BaseURL is the OpenAI-compatible API root; empty: OpenAI's.
	BaseURL string `yaml:"base_url,omitempty" json:"base_url,omitempty"`
	// APIKeyFile is a file holding the bearer key; APIKeyEnv the name of
	// an environment variable holding it. Neither: no key (a local server).
	APIKeyFile string `yaml:"api_key_file,omitempty" json:"api_key_file,omitempty"`
	APIKeyEnv  string `yaml:"api_key_env,omitempty" json:"api_key_env,omitempty"`
	// InputPrice and OutputPrice are the prices of a million input
	// (prompt) and output (completion) tokens, in the table's currency.
	InputPrice  float64 `yaml:"input_price,omitempty" json:"input_price,omitempty"`
	OutputPrice float64 `yaml:"output_price,omitempty" json:"output_price,omitempty"`
	// ContextTokens is the model's context window; 0: unknown. A prompt
	// that cannot fit is refused before it is sent.
	ContextTokens int `yaml:"context_tokens,omitempty" json:"context_tokens,omitempty"`

	// Key is the key read from APIKeyFile or APIKeyEnv by Load: never
	// written anywhere (no JSON, no YAML, no String).
	Key string `yaml:"-" json:"-"`
}

// RemoteName is the name the endpoint knows the model by.
func (m Model) RemoteName() string {
	if m.Remote != "" {
		return m.Remote
	}
	return m.Name
}

// Cost is the price of usage on this model.
func (m Model) Cost(u messages.Usage) float64 {
	return (float64(u.InputTokens)*m.InputPrice + float64(u.OutputTokens)*m.OutputPrice) / 1e6
}

// String names the model and its endpoint, never its key.
func (m Model) String() string {
	return fmt.Sprintf("%s (%s at %s)", m.Name, m.RemoteName(), cmpOr(m.BaseURL, "OpenAI"))
}

// Lookup returns the model a job names ("" for the default).
func (t *Table) Lookup(name string) (Model, bool) {
	if name == "" {
		name = t.Default
	}
	for _, m := range t.Models {
		if m.Name == name {
			return m, true
		}
	}
	if t.Open && messages.ValidModelName(name) {
		if def, ok := t.Lookup(""); ok {
			return Model{Name: name, BaseURL: def.BaseURL, Key: def.Key}, true
		}
	}
	return Model{}, false
}

// Names lists the models' names, sorted.
func (t *Table) Names() []string {
	out := make([]string, len(t.Models))
	for i, m := range t.Models {
		out[i] = m.Name
	}
	sort.Strings(out)
	return out
}

// Single is the table of a deployment without a model table file: one
// model, named name (AUTOCODER_MODEL), at baseURL with key
// (OPENAI_BASE_URL, OPENAI_API_KEY), with no prices; Open, so a job may
// name any other model that endpoint serves, as before tables existed.
func Single(name, baseURL, key string) *Table {
	if name == "" {
		name = messages.DefaultModel
	}
	return &Table{Default: name, Models: []Model{{Name: name, BaseURL: baseURL, Key: key}}, Open: true}
}

// Load reads a model table file (YAML, or JSON, which is YAML), checks it
// and reads each model's key. Unknown fields are errors, and every error
// names the file and the model or field at fault.
func Load(path string) (*Table, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("model table: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Size() > MaxFileBytes {
		return nil, fmt.Errorf("model table %s: not a regular file of at most %s", path, messages.FormatBytes(MaxFileBytes))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("model table: %w", err)
	}
	t, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("model table %s: %w", path, err)
	}
	if err := t.readKeys(); err != nil {
		return nil, fmt.Errorf("model table %s: %w", path, err)
	}
	return t, nil
}

// Parse decodes and checks a table, without reading keys.
func Parse(b []byte) (*Table, error) {
	var t Table
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true) // a misspelt "input_prise" is an error, not a free model
	if err := dec.Decode(&t); err != nil {
		return nil, err
	}
	return &t, t.Validate()
}

// Validate checks the table: at least one model, names that jobs can
// give, no name twice, prices that are numbers of at least 0, endpoints
// that are http(s) URLs, and a default in the table.
func (t *Table) Validate() error {
	if len(t.Models) == 0 {
		return errors.New("models: at least one model is needed")
	}
	seen := map[string]bool{}
	for i, m := range t.Models {
		where := fmt.Sprintf("models[%d]", i)
		if m.Name != "" {
			where = fmt.Sprintf("models[%d] (%s)", i, m.Name)
		}
		if !messages.ValidModelName(m.Name) {
			return fmt.Errorf("%s: name must be a model name: letters, digits and ._:/@+-, at most %d", where, messages.MaxModelNameLength)
		}
		if seen[m.Name] {
			return fmt.Errorf("%s: the name is used twice", where)
		}
		seen[m.Name] = true
		for _, p := range []struct {
			field string
			v     float64
		}{{"input_price", m.InputPrice}, {"output_price", m.OutputPrice}} {
			if p.v < 0 || math.IsNaN(p.v) || math.IsInf(p.v, 0) {
				return fmt.Errorf("%s: %s must be a price of at least 0 (per million tokens)", where, p.field)
			}
		}
		if m.ContextTokens < 0 {
			return fmt.Errorf("%s: context_tokens must not be negative", where)
		}
		if m.BaseURL != "" {
			u, err := url.Parse(m.BaseURL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
				return fmt.Errorf("%s: base_url must be an http(s) URL without credentials (the key goes in api_key_file or api_key_env)", where)
			}
		}
		if m.APIKeyFile != "" && m.APIKeyEnv != "" {
			return fmt.Errorf("%s: give api_key_file or api_key_env, not both", where)
		}
	}
	if t.Default == "" {
		return errors.New("default: name the model of a job that names none")
	}
	if !seen[t.Default] {
		return fmt.Errorf("default: %q is not in models (%s)", t.Default, strings.Join(t.Names(), ", "))
	}
	return nil
}

// readKeys reads each model's key from its file or variable.
func (t *Table) readKeys() error {
	for i := range t.Models {
		m := &t.Models[i]
		switch {
		case m.APIKeyFile != "":
			b, err := os.ReadFile(m.APIKeyFile)
			if err != nil {
				return fmt.Errorf("model %s: api_key_file: %w", m.Name, err)
			}
			m.Key = strings.TrimSpace(string(b))
			if m.Key == "" {
				return fmt.Errorf("model %s: api_key_file %s is empty", m.Name, m.APIKeyFile)
			}
		case m.APIKeyEnv != "":
			m.Key = os.Getenv(m.APIKeyEnv)
			if m.Key == "" {
				return fmt.Errorf("model %s: api_key_env %s is not set", m.Name, m.APIKeyEnv)
			}
		}
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
