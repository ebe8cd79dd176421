package messages_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/pkg/messages"
)

// TestAgentRefusesWhatItWouldIgnore: options the agent backend does not act
// on are refused with the field named, not accepted and dropped.
func TestAgentRefusesWhatItWouldIgnore(t *testing.T) {
	for field, edit := range map[string]func(*messages.JobSpec){
		"options.validate":   func(s *messages.JobSpec) { s.Options.Validate = messages.ValidateRun },
		"context":            func(s *messages.JobSpec) { s.Context = []string{"sha256:" + hex64} },
		"options.candidates": func(s *messages.JobSpec) { s.Options.Candidates = 3 },
		// agent_max_turns bounds the agent, not max_iterations.
		"options.max_iterations": func(s *messages.JobSpec) { s.Options.MaxIterations = 5 },
	} {
		s := messages.JobSpec{Prompt: "p", Options: messages.Options{Backend: messages.BackendAgent}}
		edit(&s)
		var fe *messages.FieldError
		if err := s.Validate(); !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%s with backend agent: %v, want a FieldError naming %s", field, err, field)
		}
		s.Options.Backend = messages.BackendPipeline
		if err := s.Validate(); err != nil {
			t.Errorf("%s with the pipeline: %v", field, err)
		}
	}
}

// TestAgentMaxTurnsNeedsTheAgent: the pipeline does not read
// agent_max_turns, so it is refused there.
func TestAgentMaxTurnsNeedsTheAgent(t *testing.T) {
	s := messages.JobSpec{Prompt: "p", Options: messages.Options{AgentMaxTurns: 20}}
	var fe *messages.FieldError
	if err := s.Validate(); !errors.As(err, &fe) || fe.Field != "options.agent_max_turns" {
		t.Errorf("agent_max_turns with the pipeline: %v, want a FieldError naming options.agent_max_turns", err)
	}
	s.Options.Backend = messages.BackendAgent
	if err := s.Validate(); err != nil {
		t.Errorf("agent_max_turns with the agent: %v", err)
	}
}

// TestMutationOptionsNeedGeneratedTests: a job without generated tests
// refuses the mutation options set explicitly, and takes mutation: off
// (what Normalize writes there); skip_tests refuses candidates.
func TestMutationOptionsNeedGeneratedTests(t *testing.T) {
	withoutTests := map[string]messages.Options{
		"skip_tests":    {SkipTests: true},
		"validate: run": {Validate: messages.ValidateRun},
		"agent":         {Backend: messages.BackendAgent},
	}
	mutation := map[string]func(*messages.Options){
		"options.mutation":          func(o *messages.Options) { o.Mutation = messages.MutationMeasure },
		"options.min_test_strength": func(o *messages.Options) { o.MinTestStrength = 0.5 },
		"options.strengthen_rounds": func(o *messages.Options) { o.StrengthenRounds = 1 },
		"options.max_mutants":       func(o *messages.Options) { o.MaxMutants = 5 },
		"options.mutation_budget":   func(o *messages.Options) { o.MutationBudget = messages.Duration(time.Minute) },
	}
	for kind, base := range withoutTests {
		for field, edit := range mutation {
			s := messages.JobSpec{Prompt: "p", Options: base}
			edit(&s.Options)
			var fe *messages.FieldError
			if err := s.Validate(); !errors.As(err, &fe) || fe.Field != field {
				t.Errorf("%s with %s: %v, want a FieldError naming %s", field, kind, err, field)
			}
			s.Options = messages.Options{}
			edit(&s.Options)
			if err := s.Validate(); err != nil {
				t.Errorf("%s with generated tests: %v", field, err)
			}
		}
		s := messages.JobSpec{Prompt: "p", Options: base}
		s.Options.Mutation = messages.MutationOff
		if err := s.Validate(); err != nil {
			t.Errorf("mutation: off with %s: %v", kind, err)
		}
	}
	s := messages.JobSpec{Prompt: "p", Options: messages.Options{SkipTests: true, Candidates: 2}}
	var fe *messages.FieldError
	if err := s.Validate(); !errors.As(err, &fe) || fe.Field != "options.candidates" {
		t.Errorf("skip_tests with candidates 2: %v, want a FieldError naming options.candidates", err)
	}
}

// TestBadDurationNamesItsField: a duration that does not parse is
// reported on its own field, not on options.timeout.
func TestBadDurationNamesItsField(t *testing.T) {
	for field, in := range map[string]string{
		"options.mutation_budget": `{"prompt":"p","options":{"timeout":"30s","mutation_budget":"abc"}}`,
		"options.timeout":         `{"prompt":"p","options":{"timeout":"abc","mutation_budget":"30s"}}`,
	} {
		_, err := messages.DecodeJobSpecJSON([]byte(in))
		var fe *messages.FieldError
		if !errors.As(err, &fe) || fe.Field != field || !strings.Contains(fe.Msg, `invalid duration "abc"`) {
			t.Errorf("%s: %v, want %s: invalid duration \"abc\"", in, err, field)
		}
	}
}
