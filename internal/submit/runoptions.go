package submit

import (
	"encoding/json"
	"flag"
	"strconv"
	"strings"

	"github.com/autocoder/autocoder/pkg/messages"
)

// runOptionFlags are the settings of a run (messages.RunOptions) as flags
// of `submit run`, `submit task run` (the run's, over the task's
// defaults) and `submit task register` (the task's defaults): the
// keywords of the reference's result.run(...) and as_task(...).
type runOptionFlags struct {
	resources string
	cpu       string
	memory    string
	timeout   string
	retries   string
	cache     string
	env       multi
	secrets   multi
	options   multi
}

func (f *runOptionFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.resources, "resources", "", "cpu=N,memory=Q of each run, e.g. cpu=2,memory=1Gi")
	fs.StringVar(&f.cpu, "cpu", "", "cores of each run (default: the job's)")
	fs.StringVar(&f.memory, "memory", "", "memory of each run, e.g. 256Mi (default: the job's)")
	fs.StringVar(&f.timeout, "timeout", "", "how long the script may run, e.g. 30s (default: the job's)")
	fs.StringVar(&f.retries, "retries", "", "retries after an infrastructure failure of the sandbox (never of a failing script)")
	fs.StringVar(&f.cache, "cache", "", "auto, override (run again, keep the answer) or disable")
	fs.Var(&f.env, "env", "NAME=VALUE set in the script's environment (repeatable)")
	fs.Var(&f.secrets, "secret", "NAME of a secret the sandbox worker provides as an environment variable (repeatable)")
	fs.Var(&f.options, "option", "key=value of a run setting: resources.cpu, resources.memory, timeout, retries, cache, env_vars.NAME, secrets (repeatable)")
}

// runOptions are the settings the flags give, checked; nil when they give none.
func (f *runOptionFlags) runOptions() (*messages.RunOptions, error) {
	raw := map[string]any{}
	set := func(path []string, v any) {
		m := raw
		for _, p := range path[:len(path)-1] {
			sub, ok := m[p].(map[string]any)
			if !ok {
				sub = map[string]any{}
				m[p] = sub
			}
			m = sub
		}
		m[path[len(path)-1]] = v
	}
	for _, s := range f.options {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, usagef("--option %q: want key=value", s)
		}
		set(strings.Split(k, "."), runOptionValue(k, v))
	}
	if f.resources != "" {
		for _, kv := range strings.Split(f.resources, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok || (k != "cpu" && k != "memory") {
				return nil, usagef("--resources %q: want cpu=N,memory=Q", f.resources)
			}
			set([]string{"resources", k}, runOptionValue("resources."+k, v))
		}
	}
	for _, p := range []struct{ key, v string }{{"resources.cpu", f.cpu}, {"resources.memory", f.memory},
		{"timeout", f.timeout}, {"retries", f.retries}, {"cache", f.cache}} {
		if p.v != "" {
			set(strings.Split(p.key, "."), runOptionValue(p.key, p.v))
		}
	}
	for _, s := range f.env {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, usagef("--env %q: want NAME=VALUE", s)
		}
		set([]string{"env_vars", k}, v)
	}
	if len(f.secrets) > 0 {
		list, _ := raw["secrets"].([]string)
		raw["secrets"] = append(list, f.secrets...)
	}
	if len(raw) == 0 {
		return nil, nil
	}
	b, _ := json.Marshal(raw)
	var o messages.RunOptions
	if err := messages.DecodeStrict(b, &o); err != nil {
		return nil, messages.PrefixField("options", err)
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &o, nil
}

// runOptionValue is a flag's text as the JSON value of key: numbers for
// cpu and retries, a list for secrets, text for the rest (a memory of
// 1073741824 is a quantity, an env value of 5 is text).
func runOptionValue(key, v string) any {
	switch key {
	case "resources.cpu", "retries":
		if n, err := strconv.ParseFloat(v, 64); err == nil {
			return n
		}
	case "secrets":
		return splitList(v)
	}
	return v
}
