package messages_test

import (
	"errors"
	"testing"

	"github.com/autocoder/autocoder/pkg/messages"
)

// TestAgentRefusesWhatItWouldIgnore: options the agent backend does not act
// on are refused with the field named, not accepted and dropped.
func TestAgentRefusesWhatItWouldIgnore(t *testing.T) {
	for field, edit := range map[string]func(*messages.JobSpec){
		"options.validate":   func(s *messages.JobSpec) { s.Options.Validate = messages.ValidateRun },
		"context":            func(s *messages.JobSpec) { s.Context = []string{"sha256:" + hex64} },
		"options.candidates": func(s *messages.JobSpec) { s.Options.Candidates = 3 },
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
