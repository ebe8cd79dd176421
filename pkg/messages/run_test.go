package messages

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseInputValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		typ     Type
		in      string
		want    string
		wantErr string
	}{
		{TypeBool, "true", "true", ""},
		{TypeBool, "false", "false", ""},
		{TypeBool, "True", "", "not true or false"},
		{TypeBool, "1", "", "not true or false"},
		{TypeBool, "yes", "", "not true or false"},
		{TypeInt, "42", "42", ""},
		{TypeInt, " -7 ", "-7", ""},
		{TypeInt, "+007", "7", ""},
		{TypeInt, "1.0", "", "not an integer"},
		{TypeInt, "1e3", "", "not an integer"},
		{TypeInt, "0x10", "", "not an integer"},
		{TypeInt, "99999999999999999999", "", "does not fit in 64 bits"},
		{TypeFloat, "1.5", "1.5", ""},
		{TypeFloat, "1e3", "1000", ""},
		{TypeFloat, "-.25", "-0.25", ""},
		{TypeFloat, "7", "7", ""},
		{TypeFloat, "inf", "", "not a decimal number"},
		{TypeFloat, "NaN", "", "not a decimal number"},
		{TypeFloat, "0x1p3", "", "not a decimal number"},
		{TypeFloat, "1e999", "", "out of the float64 range"},
		{TypeFloat, "1,5", "", "not a decimal number"},
		{TypeStr, "", "", ""},
		{TypeStr, " $(id); 'a' \"b\" -x ", " $(id); 'a' \"b\" -x ", ""},
		{TypeStr, "a\x00b", "", "not text"},
		{TypeStr, "\xff", "", "not text"},
		{TypeStr, strings.Repeat("x", MaxInputValue+1), "", "longer than"},
		{TypeFile, "/tmp/x", "", "is a path"},
		{TypeDir, "/tmp", "", "is a path"},
		{TypeDatetime, "2024-01-01", "", "unsupported input type"},
	}
	for _, tc := range tests {
		got, err := ParseInputValue(tc.typ, tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseInputValue(%s, %.20q) = %q, %v; want an error with %q", tc.typ, tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseInputValue(%s, %q) = %q, %v; want %q", tc.typ, tc.in, got, err, tc.want)
		}
	}
}

func TestValidTaskName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{"daily-sum": true, "a": true, "A_1": true, "": false, "-a": false, "a.b": false, "a b": false, "a*": false, strings.Repeat("a", 64): false} {
		if got := ValidTaskName(name); got != want {
			t.Errorf("ValidTaskName(%q) = %v", name, got)
		}
	}
}

// TestSubmitJobRunIsAdditive: a submission without a run encodes as before.
func TestSubmitJobRunIsAdditive(t *testing.T) {
	t.Parallel()
	b, _ := json.Marshal(SubmitJob{V: 1, JobID: "j", Spec: JobSpec{Prompt: "p"}})
	if strings.Contains(string(b), "run") {
		t.Errorf("%s mentions run", b)
	}
	var sub SubmitJob
	if err := json.Unmarshal([]byte(`{"v":1,"job_id":"r","spec":{"prompt":""},"run":{"from_job":"j","args":{"n":"1"},"samples":{"s":"sha256:`+strings.Repeat("a", 64)+`.csv"}}}`), &sub); err != nil {
		t.Fatal(err)
	}
	if sub.Run == nil || sub.Run.FromJob != "j" || sub.Run.Args["n"] != "1" || len(sub.Run.Samples) != 1 {
		t.Errorf("run %+v", sub.Run)
	}
}
