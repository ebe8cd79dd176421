package submit

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"gopkg.in/yaml.v3"
)

// The -o flag: a command that prints a record (a result, a task, a list)
// prints it for people by default, or as JSON or YAML for programs, the
// same fields under the same names (the JSON ones) either way.

// outputFormat is the value of -o.
type outputFormat string

const (
	formatHuman outputFormat = ""
	formatJSON  outputFormat = "json"
	formatYAML  outputFormat = "yaml"
)

// String and Set make outputFormat a flag.Value.
func (f *outputFormat) String() string { return string(*f) }

// Set takes json, yaml, or an empty value (the human view).
func (f *outputFormat) Set(v string) error {
	switch outputFormat(v) {
	case formatHuman, formatJSON, formatYAML:
		*f = outputFormat(v)
		return nil
	}
	return fmt.Errorf("-o %q: want json or yaml", v)
}

// registerOutput adds -o (and --json, the same as -o json) to fs.
func registerOutput(fs *flag.FlagSet, f *outputFormat, what string) {
	fs.Var(f, "o", "print "+what+" as json or yaml instead of the human view")
	fs.BoolFunc("json", "print "+what+" as JSON (the same as -o json)", func(v string) error {
		if v == "true" {
			*f = formatJSON
		}
		return nil
	})
}

// printAs prints v as JSON or YAML. YAML is made from the JSON text, so
// its keys are the JSON names and keep their order.
func printAs(w io.Writer, f outputFormat, v any) error {
	if f != formatYAML {
		return printJSON(w, v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var node yaml.Node
	if err := yaml.Unmarshal(b, &node); err != nil { // JSON is YAML
		return err
	}
	blockStyle(&node)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&node); err != nil {
		return err
	}
	return enc.Close()
}

// blockStyle drops the flow style ({...}, [...]) and the quotes the JSON
// text gave every node, so the YAML reads as YAML.
func blockStyle(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		n.Style = 0 // the encoder quotes what needs it ("true", "1", "a: b")
	} else if n.Kind != yaml.ScalarNode {
		n.Style = 0
	}
	for _, c := range n.Content {
		blockStyle(c)
	}
}
