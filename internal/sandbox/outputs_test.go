package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/pkg/messages"
)

func TestParseValue(t *testing.T) {
	const (
		str, i, f, b = messages.TypeStr, messages.TypeInt, messages.TypeFloat, messages.TypeBool
		dt, td       = messages.TypeDatetime, messages.TypeTimedelta
	)
	tests := []struct {
		typ     messages.Type
		in      string
		want    any
		wantErr string // substring; "" means no error
	}{
		// int
		{i, "42", int64(42), ""},
		{i, " -7\n", int64(-7), ""},
		{i, "+3", int64(3), ""},
		{i, "9223372036854775807", int64(9223372036854775807), ""},
		{i, "9223372036854775808", nil, "64 bits"},
		{i, "4.0", nil, "not an integer"},
		{i, "1_000", nil, "not an integer"},
		{i, "0x10", nil, "not an integer"},
		{i, "", nil, "not an integer"},
		{i, "42 43", nil, "not an integer"},
		// float
		{f, "3.5", 3.5, ""},
		{f, "3", 3.0, ""},
		{f, "-1e-3\n", -0.001, ""},
		{f, ".5", 0.5, ""},
		{f, "5.", 5.0, ""},
		{f, "nan", nil, "finite"},
		{f, "inf", nil, "finite"},
		{f, "1e999", nil, "range"},
		{f, "0x1p-2", nil, "finite"},
		{f, "1,5", nil, "finite"},
		{f, "3.5 EUR", nil, "finite"},
		// str
		{str, "hello\n", "hello", ""},
		{str, "  spaced  ", "  spaced  ", ""},
		{str, "two\nlines\n\n", "two\nlines\n", ""},
		{str, "crlf\r\n", "crlf", ""},
		{str, "", "", ""},
		{str, "\xff\xfe", nil, "UTF-8"},
		// bool
		{b, "true", true, ""},
		{b, "false\n", false, ""},
		{b, " true \n", true, ""},
		{b, "True", nil, "write true or false"},
		{b, "False\n", nil, "write true or false"},
		{b, "TRUE", nil, "write true or false"},
		{b, "1", nil, "write true or false"},
		{b, "yes", nil, "write true or false"},
		{b, "", nil, "write true or false"},
		// datetime
		{dt, "2024-05-01T13:30:00Z", "2024-05-01T13:30:00Z", ""},
		{dt, "2024-05-01T13:30:00+00:00", "2024-05-01T13:30:00Z", ""},
		{dt, "2024-05-01 13:30:00.123456+02:00", "2024-05-01T13:30:00.123456+02:00", ""},
		{dt, "2024-05-01T13:30:00-0500", "2024-05-01T13:30:00-05:00", ""},
		{dt, "2024-05-01T13:30:00", "2024-05-01T13:30:00", ""},
		{dt, "2024-05-01T13:30", "2024-05-01T13:30:00", ""},
		{dt, "2024-05-01", "2024-05-01T00:00:00", ""},
		{dt, "2024-13-01", nil, "ISO-8601"},
		{dt, "01/05/2024", nil, "ISO-8601"},
		{dt, "1714570200", nil, "ISO-8601"},
		{dt, "yesterday", nil, "ISO-8601"},
		// timedelta
		{td, "PT30S", 30.0, ""},
		{td, "P1DT2H", 93600.0, ""},
		{td, "PT1H30M", 5400.0, ""},
		{td, "P0DT0H0M1.5S", 1.5, ""},
		{td, "P2W", 1209600.0, ""},
		{td, "-PT1M", -60.0, ""},
		{td, "PT0,5S", 0.5, ""},
		{td, "90", 90.0, ""},
		{td, "90.25\n", 90.25, ""},
		{td, "P1Y", nil, "years or months"},
		{td, "P1M", nil, "years or months"},
		{td, "P", nil, "ISO-8601 duration"},
		{td, "PT", nil, "ISO-8601 duration"},
		{td, "P1DT", nil, "ISO-8601 duration"},
		{td, "1 day, 2:03:04", nil, "total_seconds"},
		{td, "1:30:00", nil, "ISO-8601 duration"},
		{td, "inf", nil, "ISO-8601 duration"},
	}
	for _, tc := range tests {
		t.Run(string(tc.typ)+"/"+tc.in, func(t *testing.T) {
			got, err := ParseValue(tc.typ, []byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseValue(%s, %q) = %v, %v; want an error with %q", tc.typ, tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseValue(%s, %q): %v", tc.typ, tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseValue(%s, %q) (-want +got):\n%s", tc.typ, tc.in, diff)
			}
		})
	}
}

func TestParseValueTooLarge(t *testing.T) {
	if _, err := ParseValue(messages.TypeStr, make([]byte, maxScalarOutput+1)); err == nil || !strings.Contains(err.Error(), "File") {
		t.Errorf("err = %v, want a hint to declare it File", err)
	}
}

func TestParseOutputs(t *testing.T) {
	res := RunResult{
		Outputs: map[string][]byte{
			"n": []byte("3\n"), "bad": []byte("three"), "report": []byte("a,b\n"), "plots/a.png": []byte("123"),
			"plots/sub/b.png": []byte("45"), "scalar_dir/x": []byte("1"),
		},
		OutputDirs:     []string{"plots", "plots/sub", "scalar_dir", "file_dir"},
		OutputsOmitted: []string{"link", "huge"},
	}
	outputs := map[string]messages.Type{
		"n": messages.TypeInt, "bad": messages.TypeInt, "report": messages.TypeFile, "plots": messages.TypeDir,
		"missing": messages.TypeFloat, "scalar_dir": messages.TypeStr, "file_dir": messages.TypeFile,
		"link": messages.TypeStr, "huge": messages.TypeFile, "n_as_dir": messages.TypeDir, "report_dir": messages.TypeDir,
	}
	res.Outputs["report_dir"] = []byte("not a dir")
	values, problems := ParseOutputs(res, outputs)
	wantValues := map[string]any{
		"n":      int64(3),
		"report": FileValue{Path: "report", Size: 4, SHA256: sha256Hex("a,b\n")},
		"plots":  DirValue{Path: "plots", Files: 2, Size: 5},
	}
	if diff := cmp.Diff(wantValues, values); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	wantProblems := []string{
		`output bad (int): "three" is not an integer`,
		`output file_dir (File): /var/outputs/file_dir is a directory, want a file`,
		`output huge (File): /var/outputs/huge is not a regular file, or is past the output caps of 10000 files and 64 MiB (AUTOCODER_MAX_OUTPUT_FILES, AUTOCODER_MAX_OUTPUT_BYTES)`,
		`output link (str): /var/outputs/link is not a regular file, or is past the output caps of 10000 files and 64 MiB (AUTOCODER_MAX_OUTPUT_FILES, AUTOCODER_MAX_OUTPUT_BYTES)`,
		`output missing (float): /var/outputs/missing was not written`,
		`output n_as_dir (Dir): /var/outputs/n_as_dir was not written`,
		`output report_dir (Dir): /var/outputs/report_dir is a file, want a directory`,
		`output scalar_dir (str): /var/outputs/scalar_dir is a directory, want a file`,
	}
	if diff := cmp.Diff(wantProblems, problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
