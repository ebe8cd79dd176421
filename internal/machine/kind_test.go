package machine_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/pkg/messages"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// The probe kind exists only in this test, with a stage of its own: what
// a new kind needs, written outside the package.
const (
	stageProbe   messages.Stage = "probe"
	phaseProbing machine.Phase  = "probing"
)

type probeInput struct {
	Question string `json:"question"`
}

type probeOutput struct {
	Answer string `json:"answer"`
}

func probeKind() machine.Kind {
	return machine.Kind{
		Name: "probe",
		Is:   func(sub *machine.Submission) bool { return sub.Spec.Name == "probe" },
		Start: func(m *machine.Stepper, sub *machine.Submission) {
			m.Enter(phaseProbing)
			m.Dispatch(stageProbe, probeInput{Question: sub.Spec.Prompt})
		},
		Results: []machine.Row{
			machine.On(stageProbe, func(m *machine.Stepper, _ machine.Pending, out probeOutput) {
				m.Note("the probe answered " + out.Answer)
				m.Finish(messages.StatusSucceeded, "")
			}),
		},
		Phases: machine.Phases{phaseProbing: {machine.PhaseNew}},
	}
}

func submit(t *testing.T, mc *machine.Machine, spec messages.JobSpec) (machine.State, []machine.Command) {
	t.Helper()
	spec.Normalize("m")
	return mc.Step(machine.State{}, machine.Input{Kind: machine.InputSubmitted, Time: t0,
		Submit: &machine.Submission{JobID: "j", Spec: spec}})
}

func dispatchOf(t *testing.T, cmds []machine.Command) *messages.StageCommand {
	t.Helper()
	var out *messages.StageCommand
	for _, c := range cmds {
		if c.Dispatch != nil {
			if out != nil {
				t.Fatalf("two dispatches: %s and %s", out.Stage, c.Dispatch.Stage)
			}
			out = c.Dispatch
		}
	}
	if out == nil {
		t.Fatal("nothing dispatched")
	}
	return out
}

func resultOf(d *messages.StageCommand, output string) machine.Input {
	return machine.Input{Kind: machine.InputStageResult, Time: t0.Add(time.Second), Result: &messages.StageResult{
		V: 1, JobID: d.JobID, Seq: d.Seq, Stage: d.Stage, Output: json.RawMessage(output)}}
}

// TestAKindDefinedOutsideThePackage: a kind with a stage that exists only
// in the test, one row in its result table and one phase of its own, run
// by a Machine given it beside the built-in kinds. The submission chooses
// it; every other submission still goes to the built-in kinds.
func TestAKindDefinedOutsideThePackage(t *testing.T) {
	t.Parallel()
	mc, err := machine.New(append([]machine.Kind{probeKind()}, machine.Builtin()...)...)
	if err != nil {
		t.Fatal(err)
	}
	s, cmds := submit(t, mc, messages.JobSpec{Name: "probe", Prompt: "what is six times seven?"})
	d := dispatchOf(t, cmds)
	if d.Stage != stageProbe || string(d.Input) != `{"question":"what is six times seven?"}` || s.Phase != phaseProbing {
		t.Fatalf("dispatched %s %s in phase %q", d.Stage, d.Input, s.Phase)
	}
	s, cmds = mc.Step(s, resultOf(d, `{"answer":"42"}`))
	if s.Status != messages.StatusSucceeded || s.Phase != machine.PhaseDone || len(s.Notes) != 1 || s.Notes[0] != "the probe answered 42" {
		t.Fatalf("status %s phase %q notes %v error %q", s.Status, s.Phase, s.Notes, s.Error)
	}
	if r := finished(t, cmds); !r.Success || r.Notes[0] != "the probe answered 42" {
		t.Errorf("result %+v", r)
	}

	// A malformed output of its stage errors the job, as for any stage.
	s, cmds = submit(t, mc, messages.JobSpec{Name: "probe", Prompt: "p"})
	s, _ = mc.Step(s, resultOf(dispatchOf(t, cmds), `[1]`))
	if s.Status != messages.StatusErrored || !strings.HasPrefix(s.Error, "stage probe returned malformed output") {
		t.Errorf("malformed output: status %s, error %q", s.Status, s.Error)
	}

	// Other submissions are the built-in kinds'; the default machine has
	// no probe kind, so the probe's submission is a pipeline job there.
	for _, m := range []*machine.Machine{mc, machine.Default()} {
		_, cmds = submit(t, m, messages.JobSpec{Prompt: "p"})
		if d := dispatchOf(t, cmds); d.Stage != messages.StagePlan {
			t.Errorf("a pipeline job dispatched %s", d.Stage)
		}
	}
	_, cmds = submit(t, machine.Default(), messages.JobSpec{Name: "probe", Prompt: "p"})
	if d := dispatchOf(t, cmds); d.Stage != messages.StagePlan {
		t.Errorf("without the probe kind, a probe submission dispatched %s", d.Stage)
	}
}

func finished(t *testing.T, cmds []machine.Command) messages.Result {
	t.Helper()
	for _, c := range cmds {
		if c.Finish != nil {
			return *c.Finish
		}
	}
	t.Fatal("the job did not finish")
	return messages.Result{}
}

// TestAKindsMistakesEndItsJob: a kind that enters a phase its table does
// not allow, or dispatches a stage it has no row for, ends its job errored
// with what went wrong, instead of panicking or leaving it waiting.
func TestAKindsMistakesEndItsJob(t *testing.T) {
	t.Parallel()
	illegal := probeKind()
	illegal.Name = "illegal"
	illegal.Results = []machine.Row{machine.On(stageProbe, func(m *machine.Stepper, _ machine.Pending, _ probeOutput) {
		m.Enter(machine.PhaseTesting)
		m.Dispatch(messages.StagePlan, messages.PlanInput{}) // not sent: the job is over
	})}
	rowless := probeKind()
	rowless.Name = "rowless"
	rowless.Results = nil
	for _, tc := range []struct {
		kind machine.Kind
		want string
	}{
		{illegal, `internal: the illegal kind does not allow the phase change "probing" -> "testing"`},
		{rowless, "internal: the rowless kind dispatched stage probe and has no row for its result"},
	} {
		mc, err := machine.New(tc.kind)
		if err != nil {
			t.Fatal(err)
		}
		s, cmds := submit(t, mc, messages.JobSpec{Name: "probe", Prompt: "p"})
		s, cmds = mc.Step(s, resultOf(dispatchOf(t, cmds), `{"answer":"42"}`))
		if s.Status != messages.StatusErrored || s.Error != tc.want || !s.Done() {
			t.Errorf("%s: status %s, error %q", tc.kind.Name, s.Status, s.Error)
		}
		for _, c := range cmds {
			if c.Dispatch != nil {
				t.Errorf("%s: dispatched %s after the job ended", tc.kind.Name, c.Dispatch.Stage)
			}
		}
	}

	// A submission no kind of the machine takes ends at once.
	mc, err := machine.New(probeKind())
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := submit(t, mc, messages.JobSpec{Prompt: "p"}); s.Status != messages.StatusErrored || s.Error != "internal: no kind of job takes this submission" {
		t.Errorf("a submission of no kind: status %s, error %q", s.Status, s.Error)
	}
}

// TestNewRefusesABadKind: the mistakes New can see are refused with the
// kind named.
func TestNewRefusesABadKind(t *testing.T) {
	t.Parallel()
	bad := func(change func(k *machine.Kind)) machine.Kind {
		k := probeKind()
		change(&k)
		return k
	}
	for _, tc := range []struct {
		kinds []machine.Kind
		want  string
	}{
		{nil, "machine: no job kinds"},
		{[]machine.Kind{bad(func(k *machine.Kind) { k.Name = "" })}, "machine: a kind has no name"},
		{[]machine.Kind{bad(func(k *machine.Kind) { k.Is = nil })}, "machine: kind probe needs Is and Start"},
		{[]machine.Kind{probeKind(), probeKind()}, `machine: two kinds are named "probe"`},
		{[]machine.Kind{bad(func(k *machine.Kind) { k.Results = append(k.Results, k.Results[0]) })}, "machine: kind probe has two rows for stage probe"},
		{[]machine.Kind{bad(func(k *machine.Kind) { k.Results = append(k.Results, machine.Row{}) })}, "machine: kind probe has a row without a handler (use On)"},
		{[]machine.Kind{bad(func(k *machine.Kind) { k.Phases[machine.PhaseDone] = []machine.Phase{phaseProbing} })},
			"machine: kind probe: PhaseDone is entered by Finish, not by a row of Phases"},
		{[]machine.Kind{bad(func(k *machine.Kind) { k.Phases[machine.PhaseNew] = []machine.Phase{phaseProbing} })},
			"machine: kind probe: no phase change enters PhaseNew"},
		{[]machine.Kind{bad(func(k *machine.Kind) { k.Phases[phaseProbing] = []machine.Phase{machine.PhaseDone} })},
			"machine: kind probe: phase probing is entered from PhaseDone, which a job never leaves"},
	} {
		if _, err := machine.New(tc.kinds...); err == nil || err.Error() != tc.want {
			t.Errorf("New = %v, want %q", err, tc.want)
		}
	}
	if _, err := machine.New(machine.Builtin()...); err != nil {
		t.Errorf("the built-in kinds: %v", err)
	}
}
