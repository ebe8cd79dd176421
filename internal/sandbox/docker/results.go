package docker

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/autocoder/autocoder/internal/sandbox"
)

// A run's results (RunSpec.Collect and /var/outputs) come back in the
// stub's stdout trailer, not through the engine's archive API: once every
// process of the run is dead, the stub lists what was asked for (regular
// files only, never through a symlink) and streams their contents after
// the trailer line "\x00autocoder-exit:<nonce>:<code>:<head>:<data>\n":
// <head> bytes of JSON (resultsHead), then <data> bytes, the files' in
// the listed order. That saves the run one engine round trip per path
// component and per file. The worker bounds both lengths before it reads
// a byte, and applies the caps itself (outputCollection): the stub only
// spares sending what the worker would drop. A run controls what its
// container holds, so the stub's word is no more trusted than the run's.

// maxResultsHead bounds the listing of a run's results.
const maxResultsHead = 32 << 20

// outputsListSlack is how many entries past OutputCaps.MaxFiles the stub
// lists (so the worker can name what it omitted) before it stops.
const outputsListSlack = 256

// resultsSpec is what the stub is asked to send back.
type resultsSpec struct {
	Collect []string     `json:"collect,omitempty"` // workspace files (cleaned, slash-separated)
	Budget  int64        `json:"budget"`            // bytes of Collect in all
	Outputs *outputsSpec `json:"outputs,omitempty"` // /var/outputs, when collected
}

type outputsSpec struct {
	Names    []string `json:"names,omitempty"`
	MaxFiles int      `json:"max_files"`
	MaxBytes int64    `json:"max_bytes"`
	ListMax  int      `json:"list_max"` // entries the stub lists before it stops
}

// newResultsSpec is the results request of spec, or nil when it asks for
// none.
func newResultsSpec(spec sandbox.RunSpec) *resultsSpec {
	if len(spec.Collect) == 0 && !spec.CollectOutputs {
		return nil
	}
	r := &resultsSpec{Budget: sandbox.MaxCollected}
	for _, name := range spec.Collect {
		r.Collect = append(r.Collect, filepath.ToSlash(filepath.Clean(name)))
	}
	if spec.CollectOutputs {
		caps := spec.OutputCaps.WithDefaults()
		r.Outputs = &outputsSpec{Names: caps.Names, MaxFiles: caps.MaxFiles, MaxBytes: caps.MaxBytes,
			ListMax: caps.MaxFiles + outputsListSlack}
	}
	return r
}

// maxData is the most file content the stub may send for r.
func (r *resultsSpec) maxData() int64 {
	if r == nil {
		return 0
	}
	n := r.Budget
	if r.Outputs != nil {
		n += r.Outputs.MaxBytes
	}
	return n
}

// resultsHead is the stub's listing.
type resultsHead struct {
	Files []struct {
		Name string `json:"name"`
		Size int64  `json:"size"`
	} `json:"files"`
	Outputs []outputEntry `json:"outputs"`
	Error   string        `json:"error"`
}

// outputEntry is one entry under /var/outputs: a directory ("d"), a
// regular file ("f", with its contents sent when Data), anything else
// ("o"), or the mark that the listing stopped there ("x").
type outputEntry struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
	Size int64  `json:"size"`
	Data bool   `json:"data"`
}

// applyResults fills res from the stub's results frame (head, then data).
func applyResults(res *sandbox.RunResult, r *resultsSpec, frame []byte, headLen int) error {
	var head resultsHead
	if err := json.Unmarshal(frame[:headLen], &head); err != nil {
		return fmt.Errorf("docker: the sandbox's results: %w", err)
	}
	if head.Error != "" {
		return fmt.Errorf("docker: the sandbox could not %s", head.Error)
	}
	data := frame[headLen:]
	next := func(size int64) ([]byte, error) {
		if size < 0 || size > int64(len(data)) {
			return nil, errors.New("docker: the sandbox's results are shorter than their listing")
		}
		b := data[:size:size]
		data = data[size:]
		return b, nil
	}
	files, err := takeCollected(r, head, next)
	if err != nil {
		return err
	}
	res.Files = files
	if r.Outputs != nil {
		caps := sandbox.OutputCaps{Names: r.Outputs.Names, MaxFiles: r.Outputs.MaxFiles, MaxBytes: r.Outputs.MaxBytes}
		c := &outputCollection{caps: caps, files: map[string][]byte{}, budget: caps.MaxBytes}
		if err := c.takeAll(head.Outputs, next); err != nil {
			return err
		}
		res.Outputs, res.OutputDirs, res.OutputsOmitted = c.files, c.dirs, c.omitted
	}
	if len(data) != 0 {
		return errors.New("docker: the sandbox's results are longer than their listing")
	}
	return nil
}

// takeCollected keeps the listed workspace files that were asked for,
// within the budget.
func takeCollected(r *resultsSpec, head resultsHead, next func(int64) ([]byte, error)) (map[string][]byte, error) {
	asked := map[string]bool{}
	for _, name := range r.Collect {
		asked[name] = true
	}
	out := map[string][]byte{}
	budget := r.Budget
	for _, f := range head.Files {
		b, err := next(f.Size)
		if err != nil {
			return nil, err
		}
		if asked[f.Name] && f.Size <= budget {
			delete(asked, f.Name)
			budget -= f.Size
			out[f.Name] = b
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// maxSkipped bounds how much of /var/outputs past the cap a listing may
// pass over (to name what was omitted) before the rest is left unlisted.
const maxSkipped = 256 << 20

// outputCollection applies OutputCaps to the listing of /var/outputs.
type outputCollection struct {
	caps    sandbox.OutputCaps
	files   map[string][]byte
	dirs    []string
	omitted []string
	budget  int64
	skipped int64 // bytes passed over in the current declared output
	entries int
}

// takeAll takes the listing's entries in order: each declared output's
// entries (all of /var/outputs' without names) are a run, and a run that
// passes over more than maxSkipped bytes is cut off there.
func (c *outputCollection) takeAll(entries []outputEntry, next func(int64) ([]byte, error)) error {
	top, cut := "", false
	for _, e := range entries {
		var data []byte
		if e.Kind == "f" && e.Data {
			var err error
			if data, err = next(e.Size); err != nil {
				return err
			}
		}
		rel := strings.TrimPrefix(path.Clean("/"+e.Path), "/")
		if rel == "" || !c.caps.Declared(rel) {
			continue
		}
		if t, _, _ := strings.Cut(rel, "/"); len(c.caps.Names) > 0 && t != top {
			top, cut, c.skipped = t, false, 0 // each declared output passes over its own share
		}
		if cut {
			continue
		}
		if e.Kind == "x" {
			t, _, _ := strings.Cut(rel, "/")
			c.omitted = append(c.omitted, "... (the rest of "+t+" was not read)")
			cut = true
			continue
		}
		if c.entries++; c.entries > c.caps.MaxFiles || c.skipped > maxSkipped {
			c.omitted = append(c.omitted, rel)
			if c.skipped > maxSkipped {
				t, _, _ := strings.Cut(rel, "/")
				c.omitted = append(c.omitted, "... (the rest of "+t+" was not read)")
				cut = true
			}
			continue
		}
		c.take(e, data, rel)
	}
	return nil
}

// take records one entry.
func (c *outputCollection) take(e outputEntry, data []byte, rel string) {
	switch {
	case e.Kind == "d":
		c.dirs = append(c.dirs, rel)
	case e.Kind == "f" && e.Size > c.budget:
		c.omitted = append(c.omitted, rel)
		c.skipped += e.Size
	case e.Kind == "f" && e.Data && int64(len(data)) == e.Size:
		c.budget -= e.Size
		c.files[rel] = data
	default: // special files, and a file the stub did not send
		c.omitted = append(c.omitted, rel)
	}
}
