package codemodestages_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/internal/codemodestages"
	"github.com/autocoder/autocoder/pkg/messages"
)

// corpusDir holds the corpus: programs in the style models write, the
// tool fakes (tools.json) and what real CPython gives for each
// (expected.json, written by record.py).
const corpusDir = "../codemode/pyexec/testdata/corpus"

// corpusRefusals are the corpus programs the code-mode path does not
// answer as CPython does, each with the reason; docs/codemode.md lists the
// same. The test fails when this list is not exactly what happened.
var corpusRefusals = map[string]string{}

// TestCorpus runs every program of the corpus through the code-mode job
// path (the codemode_exec stage handler: CPython in a real bubblewrap
// sandbox, the prelude, the bridge and the limits a job uses, tools
// served over real NATS) and compares its value and printed output with
// what CPython gave. At least 95% must match.
func TestCorpus(t *testing.T) {
	t.Parallel()
	nc := natsConn(t)
	tools := serveCorpusTools(t, nc)
	var expected struct {
		Programs map[string]struct {
			Value  json.RawMessage `json:"value"`
			Output string          `json:"output"`
		} `json:"programs"`
	}
	readJSON(t, filepath.Join(corpusDir, "expected.json"), &expected)
	names := make([]string, 0, len(expected.Programs))
	for n := range expected.Programs {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) < 60 {
		t.Fatalf("the corpus has %d programs, want at least 60", len(names))
	}
	h := mux(t, codemodestages.Config{Conn: nc, Python: python(t)})
	failed := map[string]string{}
	for _, name := range names {
		code, err := os.ReadFile(filepath.Join(corpusDir, name))
		if err != nil {
			t.Fatal(err)
		}
		want := expected.Programs[name]
		o := serve[messages.CodeModeExecOutput](t, h, execCommand(t, messages.CodeModeExecInput{Code: string(code), Tools: tools, Scope: "corpus-" + name}))
		switch {
		case !o.OK:
			failed[name] = fmt.Sprintf("refused: %s (%s)", o.Error, o.ErrorKind)
		case canonical(t, o.Value) != canonical(t, want.Value):
			failed[name] = fmt.Sprintf("value %s, CPython gives %s", o.Value, want.Value)
		case o.Output != want.Output:
			failed[name] = fmt.Sprintf("printed %q, CPython prints %q", o.Output, want.Output)
		}
	}
	passed := len(names) - len(failed)
	t.Logf("corpus: %d of %d programs answer as CPython does (%.1f%%)", passed, len(names), 100*float64(passed)/float64(len(names)))
	for _, n := range sortedKeys(failed) {
		t.Logf("%s: %s", n, failed[n])
	}
	if passed*100 < 95*len(names) {
		t.Errorf("only %d of %d corpus programs pass (want 95%%)", passed, len(names))
	}
	for n := range failed {
		if _, known := corpusRefusals[n]; !known {
			t.Errorf("%s fails and is not listed in corpusRefusals (and docs/codemode.md): %s", n, failed[n])
		}
	}
	for n := range corpusRefusals {
		if _, still := failed[n]; !still {
			t.Errorf("%s is listed as refused but passes: take it off corpusRefusals and docs/codemode.md", n)
		}
	}
}

// serveCorpusTools serves the fakes of tools.json over NATS, as record.py
// defines them: each answers from its table by the canonical JSON of its
// arguments, or fails with the table's error naming them.
func serveCorpusTools(t *testing.T, nc *nats.Conn) []string {
	t.Helper()
	var specs map[string]struct {
		Doc     string                     `json:"doc"`
		Params  []codemode.Param           `json:"params"`
		Answers map[string]json.RawMessage `json:"answers"`
		Error   string                     `json:"error"`
	}
	readJSON(t, filepath.Join(corpusDir, "tools.json"), &specs)
	var names []string
	for name, spec := range specs {
		svc, err := codemode.ServeTool(nc, codemode.Tool{Name: name, Doc: spec.Doc, Params: spec.Params,
			Func: func(_ context.Context, args map[string]any) (any, error) {
				key, err := json.Marshal(args)
				if err != nil {
					return nil, err
				}
				if a, ok := spec.Answers[string(key)]; ok {
					return a, nil
				}
				return nil, errors.New(spec.Error + ": " + string(key))
			}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = svc.Stop() })
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// canonical is JSON with numbers kept as written and keys sorted.
func canonical(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	if len(raw) == 0 {
		return "null"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "invalid: " + string(raw)
	}
	b, _ := json.Marshal(v)
	return strings.TrimSpace(string(b))
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
