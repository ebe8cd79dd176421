package messages

import (
	"strings"
	"testing"
)

func TestValidateCodeRunnerOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(*JobSpec)
		want string // "" for valid
	}{
		{"default", func(*JobSpec) {}, ""},
		{"tests", func(s *JobSpec) { s.Options.Validate = ValidateTests }, ""},
		{"run with context", func(s *JobSpec) { s.Options.Validate = ValidateRun; s.Context = []string{"docs"} }, ""},
		{"unknown", func(s *JobSpec) { s.Options.Validate = "lint" }, `options.validate: unsupported value "lint" (want tests or run)`},
		{"run and skip_tests", func(s *JobSpec) { s.Options.Validate = ValidateRun; s.Options.SkipTests = true }, "options.skip_tests: cannot be combined with options.validate: run"},
		{"run and candidates", func(s *JobSpec) { s.Options.Validate = ValidateRun; s.Options.Candidates = 3 }, "options.candidates: must be 1 with options.validate: run"},
		{"empty context path", func(s *JobSpec) { s.Context = []string{"docs", ""} }, "context[1]: path is empty"},
		{"too many context paths", func(s *JobSpec) { s.Context = make([]string, MaxContextEntries+1) }, "context: has 65 entries, at most 64"},
	} {
		s := JobSpec{Prompt: "p"}
		tc.edit(&s)
		err := s.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: Validate = %v, want nil", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: Validate = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestDecodeKnowsCodeRunnerFields(t *testing.T) {
	t.Parallel()
	s, err := DecodeJobSpecJSON([]byte(`{"prompt": "p", "context": ["docs/"], "options": {"validate": "run"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !s.Options.ValidatesByRun() || len(s.Context) != 1 {
		t.Errorf("decoded %+v, want validate run and one context entry", s)
	}
}
