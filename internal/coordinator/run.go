package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/pkg/messages"
)

// submitRun starts a run of a finished job's script (a submission with
// messages.SubmitJob.Run): the submission is filled from that job and
// stepped like any other. A request that cannot be run (an unknown or
// failed job, an undeclared input, a value of the wrong type) finishes the
// run with the reason.
func (c *Coordinator) submitRun(ctx context.Context, jobID string, raw json.RawMessage) error {
	var req messages.RunRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return c.reject(ctx, jobID, &messages.FieldError{Field: "run", Msg: err.Error()})
	}
	sub, err := c.PrepareRun(ctx, jobID, req)
	if err != nil {
		var fe *messages.FieldError
		if errors.As(err, &fe) {
			return c.reject(ctx, jobID, err)
		}
		return err // the buckets: retried
	}
	return c.apply(ctx, jobID, machine.Event{Kind: machine.EventSubmitted, Time: c.cfg.Now(), Submit: sub})
}

// PrepareRun builds the submission of run jobID from the finished job
// req.FromJob: its script, environment, declared outputs and options, its
// samples with those req replaces, req's File and Dir inputs, and req's
// values of its scalar inputs, each checked against its declared type.
// Problems with the request are *messages.FieldError; other errors are the
// buckets'.
func (c *Coordinator) PrepareRun(ctx context.Context, jobID string, req messages.RunRequest) (*machine.Submission, error) {
	bad := func(field, format string, a ...any) error {
		return &messages.FieldError{Field: field, Msg: fmt.Sprintf(format, a...)}
	}
	if !bus.ValidJobID(req.FromJob) {
		return nil, bad("run.from_job", "%q is not a job id", req.FromJob)
	}
	from := req.FromJob
	entry, err := c.cfg.Results.Get(ctx, bus.JobKey(from))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, bad("run.from_job", "job %s is unknown or not finished", from)
	}
	if err != nil {
		return nil, fmt.Errorf("load result of job %s: %w", from, err)
	}
	var res messages.Result
	if err := json.Unmarshal(entry.Value(), &res); err != nil {
		return nil, bad("run.from_job", "job %s has a corrupt result: %v", from, err)
	}
	switch {
	case !res.Success:
		return nil, bad("run.from_job", "job %s did not succeed (%s), so it has no tested script to run", from, res.Status)
	case res.Solution == nil || res.Solution.Code == "" || res.Spec == nil:
		return nil, bad("run.from_job", "job %s has no script to run", from)
	}
	spec := *res.Spec
	run := &machine.Run{FromJob: from, Solution: *res.Solution, Image: res.Image,
		Packages: res.DetectedPackages, SystemPackages: res.DetectedSystemPackages, Args: map[string]string{}}
	// The package set the image was built for is on the job's state; the
	// result's detected packages stand in if the state is gone.
	if st, err := LoadState(ctx, c.cfg.States, from); err == nil && len(st.BuiltPackages)+len(st.SystemPackages) > 0 {
		run.Packages, run.SystemPackages = st.BuiltPackages, st.SystemPackages
	}

	for _, name := range sortedKeys(req.Args) {
		field := "run.args." + name
		t, ok := spec.Inputs[name]
		switch {
		case !ok:
			return nil, bad(field, "job %s has no input %s (inputs: %s)", from, name, typedNames(spec.Inputs))
		case t == messages.TypeFile || t == messages.TypeDir:
			return nil, bad(field, "is a %s input: give a path, uploaded as a file", t)
		}
		v, err := messages.ParseInputValue(t, req.Args[name])
		if err != nil {
			return nil, bad(field, "%s input %s", t, err)
		}
		run.Args[name] = v
	}

	samples := map[string]messages.SampleRef{}
	for name, obj := range spec.Samples {
		ref, ok := messages.ParseObjectRef(obj)
		if !ok {
			return nil, bad("run.from_job", "job %s: sample %s is not an object reference", from, name)
		}
		samples[name] = messages.SampleRef{Name: name, Object: ref.String(), FileName: name + ref.Ext}
	}
	for _, name := range sortedKeys(req.Samples) {
		field := "run.samples." + name
		ref, ok := messages.ParseObjectRef(req.Samples[name])
		if !ok {
			return nil, bad(field, "must be an object reference (sha256:<hex>[.ext])")
		}
		r := messages.SampleRef{Name: name, Object: ref.String(), FileName: name + ref.Ext}
		if old, isSample := samples[name]; isSample {
			// The script reads /var/inputs/<name><ext of the job's file> by
			// default; a file of another type is named by its option.
			if r.FileName != old.FileName {
				run.Args[name] = "/var/inputs/" + r.FileName
			}
			samples[name] = r
			spec.Samples[name] = r.Object
			continue
		}
		switch spec.Inputs[name] {
		case messages.TypeFile:
		case messages.TypeDir:
			r.FileName, r.Dir = name, true
		default:
			return nil, bad(field, "job %s has no sample or File or Dir input %s (samples: %s; inputs: %s)",
				from, name, names(spec.Samples), typedNames(spec.Inputs))
		}
		samples[name] = r
		run.Args[name] = "/var/inputs/" + r.FileName
	}
	refs := make([]messages.SampleRef, 0, len(samples))
	for _, name := range keysOf(samples) {
		refs = append(refs, samples[name])
	}
	if len(run.Args) == 0 {
		run.Args = nil
	}
	return &machine.Submission{JobID: jobID, Spec: spec, Samples: refs, Run: run}, nil
}

func names[V any](m map[string]V) string {
	if len(m) == 0 {
		return "none"
	}
	return strings.Join(keysOf(m), ", ")
}

func typedNames(m map[string]messages.Type) string {
	if len(m) == 0 {
		return "none"
	}
	var out []string
	for _, k := range keysOf(m) {
		out = append(out, k+" ("+string(m[k])+")")
	}
	return strings.Join(out, ", ")
}

func keysOf[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
