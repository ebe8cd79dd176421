package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/pkg/messages"
)

// submitRun starts a run of a finished job's script (a submission with
// messages.SubmitJob.Run): the submission is filled from that job and
// stepped like any other. A request that cannot be run (an unknown or
// failed job, an undeclared input, a value of the wrong type) finishes the
// run with the reason.
func (c *Coordinator) submitRun(ctx context.Context, jobID string, raw json.RawMessage) error {
	var req messages.RunRequest
	if err := messages.DecodeStrict(raw, &req); err != nil {
		return c.reject(ctx, jobID, fmt.Errorf("run: %w", err)) // an unknown field too, by name
	}
	sub, err := c.PrepareRun(ctx, jobID, req)
	if err != nil {
		var fe *messages.FieldError
		if errors.As(err, &fe) {
			return c.reject(ctx, jobID, err)
		}
		return err // the buckets: retried
	}
	return c.apply(ctx, jobID, machine.Input{Kind: machine.InputSubmitted, Time: c.cfg.Now(), Submit: sub})
}

// PrepareRun builds the submission of run jobID from the finished job
// req.FromJob: its script, environment, declared outputs and options (with
// req.Options over them: resources, timeout, retries, cache, env_vars and
// secrets), its
// samples with those req replaces, req's File and Dir inputs, and req's
// values of its scalar inputs, each checked against its declared type.
// Every sample and File/Dir input is passed to the script by its option
// (--name /var/inputs/<file>), so a script that requires them runs too.
// Problems with the request are *messages.FieldError; other errors are the
// buckets'.
func (c *Coordinator) PrepareRun(ctx context.Context, jobID string, req messages.RunRequest) (*machine.Submission, error) {
	if !bus.ValidJobID(req.FromJob) {
		return nil, badRun("run.from_job", "%q is not a job id", req.FromJob)
	}
	if req.Options != nil {
		if err := req.Options.Validate(); err != nil {
			return nil, messages.PrefixField("run", err)
		}
	}
	from := req.FromJob
	res, err := c.finishedResult(ctx, from)
	if err != nil {
		return nil, err
	}
	spec := *res.Spec
	// The run's settings over the job's (a copy: the job's maps stay as they are).
	spec.Options.EnvVars = maps.Clone(spec.Options.EnvVars)
	spec.Options.Secrets = slices.Clone(spec.Options.Secrets)
	req.Options.ApplyTo(&spec.Options)
	if err := spec.Validate(); err != nil { // the merged env_vars and secrets within their bounds
		return nil, messages.PrefixField("run", err)
	}
	run := &machine.Rerun{FromJob: from, Solution: *res.Solution, Image: res.Image,
		Packages: res.DetectedPackages, SystemPackages: res.DetectedSystemPackages}
	// The package set the image was built for is on the job's state; the
	// result's detected packages stand in if the state is gone.
	if st, err := LoadState(ctx, c.cfg.States, from); err == nil && len(st.BuiltPackages)+len(st.SystemPackages) > 0 {
		run.Packages, run.SystemPackages = st.BuiltPackages, st.SystemPackages
	}
	if run.Args, err = scalarArgs(from, spec.Inputs, req.Args); err != nil {
		return nil, err
	}
	refs, err := runFiles(from, &spec, req.Samples)
	if err != nil {
		return nil, err
	}
	for name, path := range protocol.FileArgs(refs) {
		run.Args[name] = path
	}
	if len(run.Args) == 0 {
		run.Args = nil
	}
	return &machine.Submission{JobID: jobID, Spec: spec, Samples: refs, Rerun: run}, nil
}

// badRun is a problem with a run request.
func badRun(field, format string, a ...any) error {
	return &messages.FieldError{Field: field, Msg: fmt.Sprintf(format, a...)}
}

// finishedResult loads the result of job from, which must have succeeded
// with a script to run.
func (c *Coordinator) finishedResult(ctx context.Context, from string) (messages.Result, error) {
	var res messages.Result
	entry, err := c.cfg.Results.Get(ctx, bus.JobKey(from))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return res, badRun("run.from_job", "job %s is unknown or not finished", from)
	}
	if err != nil {
		return res, fmt.Errorf("load result of job %s: %w", from, err)
	}
	if err := json.Unmarshal(entry.Value(), &res); err != nil {
		return res, badRun("run.from_job", "job %s has a corrupt result: %v", from, err)
	}
	switch {
	case !res.Success:
		return res, badRun("run.from_job", "job %s did not succeed (%s), so it has no tested script to run", from, res.Status)
	case res.Solution == nil || res.Solution.Code == "" || res.Spec == nil:
		return res, badRun("run.from_job", "job %s has no script to run", from)
	}
	return res, nil
}

// scalarArgs checks the values of the job's str, int, float and bool inputs
// and returns them in canonical form, by name. It never returns nil.
func scalarArgs(from string, inputs map[string]messages.Type, values map[string]string) (map[string]string, error) {
	args := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(values)) {
		field := "run.args." + name
		t, ok := inputs[name]
		switch {
		case !ok:
			return nil, badRun(field, "job %s has no input %s (inputs: %s)", from, name, typedNames(inputs))
		case t == messages.TypeFile || t == messages.TypeDir:
			return nil, badRun(field, "is a %s input: give a path, uploaded as a file", t)
		}
		v, err := messages.ParseInputValue(t, values[name])
		if err != nil {
			return nil, badRun(field, "%s input %s", t, err)
		}
		args[name] = v
	}
	return args, nil
}

// runFiles returns the files of a run, sorted by name: the job's samples,
// with those the request replaces (recorded in spec.Samples), and the
// request's File and Dir inputs.
func runFiles(from string, spec *messages.JobSpec, given map[string]string) ([]messages.SampleRef, error) {
	samples := map[string]messages.SampleRef{}
	for name, obj := range spec.Samples {
		ref, ok := messages.ParseObjectRef(obj)
		if !ok {
			return nil, badRun("run.from_job", "job %s: sample %s is not an object reference", from, name)
		}
		samples[name] = messages.SampleRef{Name: name, Object: ref.String(), FileName: name + ref.Ext}
	}
	for _, name := range slices.Sorted(maps.Keys(given)) {
		r, err := runFile(from, spec, name, given[name], samples)
		if err != nil {
			return nil, err
		}
		samples[name] = r
	}
	refs := make([]messages.SampleRef, 0, len(samples))
	for _, name := range slices.Sorted(maps.Keys(samples)) {
		refs = append(refs, samples[name])
	}
	return refs, nil
}

// runFile is the file the request gives for name: a new sample in place of
// one of the job's (a file of another type is named by its option like any
// other), or a File or Dir input.
func runFile(from string, spec *messages.JobSpec, name, obj string, samples map[string]messages.SampleRef) (messages.SampleRef, error) {
	field := "run.samples." + name
	ref, ok := messages.ParseObjectRef(obj)
	if !ok {
		return messages.SampleRef{}, badRun(field, "must be an object reference (sha256:<hex>[.ext])")
	}
	r := messages.SampleRef{Name: name, Object: ref.String(), FileName: name + ref.Ext}
	if _, isSample := samples[name]; isSample {
		spec.Samples[name] = r.Object
		return r, nil
	}
	switch spec.Inputs[name] {
	case messages.TypeFile:
	case messages.TypeDir:
		r.FileName, r.Dir = name, true
	default:
		return messages.SampleRef{}, badRun(field, "job %s has no sample or File or Dir input %s (samples: %s; inputs: %s)",
			from, name, names(spec.Samples), typedNames(spec.Inputs))
	}
	return r, nil
}

func names[V any](m map[string]V) string {
	if len(m) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(m)), ", ")
}

func typedNames(m map[string]messages.Type) string {
	if len(m) == 0 {
		return "none"
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+" ("+string(m[k])+")")
	}
	return strings.Join(out, ", ")
}
