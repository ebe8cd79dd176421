package jobfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/autocoder/autocoder/pkg/messages"
)

// MaxSpecBytes bounds a job file (1 MiB): a spec is a page of text, not
// data; samples are separate files.
const MaxSpecBytes = 1 << 20

// LoadOptions are the choices Load leaves to its caller.
type LoadOptions struct {
	// AllowOutside lets sample and context paths leave the job file's
	// folder (LocalFiles.AllowOutside).
	AllowOutside bool
}

// Load reads a job file (YAML or JSON, by content), decodes it strictly and
// validates it. The file must be a regular file of at most MaxSpecBytes (see
// ReadRegular). Sample and context paths are resolved inside the file's
// folder (LocalFiles), and every sample must be a readable regular file.
func Load(path string, opts LoadOptions) (*messages.JobSpec, error) {
	data, err := ReadRegular(path, MaxSpecBytes)
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe):
		return nil, fmt.Errorf("job file: %w", err) // already names the file
	case err != nil:
		return nil, fmt.Errorf("job file %s: %w", path, err)
	}
	spec, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("job file %s: %w", path, err)
	}
	lf := LocalFiles{Dir: filepath.Dir(path), AllowOutside: opts.AllowOutside}
	if err := lf.Resolve(spec); err != nil {
		return nil, fmt.Errorf("job file %s: %w", path, err)
	}
	return spec, nil
}

// Decode decodes a YAML or JSON job spec strictly: unknown fields, wrong
// types and bad values are errors that name the field.
func Decode(data []byte) (*messages.JobSpec, error) {
	if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return nil, &messages.FieldError{Msg: "not a job spec: the file is not UTF-8 text"}
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, &messages.FieldError{Msg: "job spec is empty"}
	}
	if trimmed[0] == '{' {
		return messages.DecodeJobSpecJSON(trimmed)
	}
	// One document: yaml.Unmarshal would read the first and drop the rest
	// unchecked, so a file of several submitted only its first.
	var raw any
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return nil, &messages.FieldError{Msg: "malformed YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	for { // empty documents (a --- at the end) are nothing
		var more any
		err := dec.Decode(&more)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || more != nil {
			return nil, &messages.FieldError{Msg: "a job file holds one YAML document: this one has more (a line of ---)"}
		}
	}
	raw, err := jsonable(raw, "")
	if err != nil {
		return nil, err
	}
	if err := messages.CheckKnownFields(raw); err != nil {
		return nil, err
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, &messages.FieldError{Msg: "job spec: " + err.Error()}
	}
	return messages.DecodeJobSpecJSON(b)
}

// jsonable turns YAML's decoded values into what encoding/json accepts:
// mappings with string keys only.
func jsonable(v any, path string) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			c, err := jsonable(e, join(path, k))
			if err != nil {
				return nil, err
			}
			x[k] = c
		}
		return x, nil
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			ks, ok := k.(string)
			if !ok {
				return nil, &messages.FieldError{Field: path, Msg: fmt.Sprintf("key %v must be a string", k)}
			}
			c, err := jsonable(e, join(path, ks))
			if err != nil {
				return nil, err
			}
			m[ks] = c
		}
		return m, nil
	case []any:
		for i, e := range x {
			c, err := jsonable(e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			x[i] = c
		}
		return x, nil
	}
	return v, nil
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}
