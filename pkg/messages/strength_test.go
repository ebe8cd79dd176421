package messages

import (
	"errors"
	"testing"
	"time"
)

// A mutation option the mode ignores is refused by name: the tuning with
// mutation: off, the strengthening's with mutation: measure. What the
// mode uses is accepted, and Normalize fills in only that.
func TestMutationOptionsTheModeIgnores(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode  Mutation
		edit  func(*Options)
		field string // "" when accepted
	}{
		{MutationOff, func(o *Options) { o.MinTestStrength = 0.9 }, "options.min_test_strength"},
		{MutationOff, func(o *Options) { o.StrengthenRounds = 3 }, "options.strengthen_rounds"},
		{MutationOff, func(o *Options) { o.MaxMutants = 10 }, "options.max_mutants"},
		{MutationOff, func(o *Options) { o.MutationBudget = Duration(time.Minute) }, "options.mutation_budget"},
		{MutationMeasure, func(o *Options) { o.MinTestStrength = 0.9 }, "options.min_test_strength"},
		{MutationMeasure, func(o *Options) { o.StrengthenRounds = 3 }, "options.strengthen_rounds"},
		{MutationMeasure, func(o *Options) { o.MaxMutants = 10 }, ""},
		{MutationMeasure, func(o *Options) { o.MutationBudget = Duration(time.Minute) }, ""},
		{MutationOn, func(o *Options) { o.MinTestStrength, o.StrengthenRounds = 0.9, 3 }, ""},
		{"", func(o *Options) { o.MinTestStrength, o.StrengthenRounds = 0.9, 3 }, ""},
	} {
		spec := JobSpec{Prompt: "p", Options: Options{Mutation: tc.mode}}
		tc.edit(&spec.Options)
		err := spec.Validate()
		var fe *FieldError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("mutation %q, %+v: refused: %v", tc.mode, spec.Options, err)
		case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
			t.Errorf("mutation %q, %+v: %v, want a FieldError on %s", tc.mode, spec.Options, err, tc.field)
		}
	}
	for _, mode := range []Mutation{MutationOff, MutationMeasure, MutationOn, ""} {
		spec := JobSpec{Prompt: "p", Options: Options{Mutation: mode}}
		spec.Normalize("m")
		if err := spec.Validate(); err != nil {
			t.Errorf("mutation %q: the normalized spec is refused: %v", mode, err)
		}
	}
}
