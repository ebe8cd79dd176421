package problemset

import (
	"strings"
	"testing"
)

// TestReadSaysWhichLine: every problem with a problem set names its line,
// a line over the size bound included (before, bufio's "token too long").
func TestReadSaysWhichLine(t *testing.T) {
	t.Parallel()
	good := `{"task_id":"T/0","prompt":"def f():\n","entry_point":"f","test":"def check(candidate):\n    pass\n"}`
	for _, tc := range []struct {
		name, input, want string
	}{
		{"not JSON", good + "\n{oops\n", "line 2:"},
		{"a task twice", good + "\n\n" + good + "\n", "line 3: task_id \"T/0\" appears twice"},
		{"a line over the bound", good + "\n" + `{"task_id":"` + strings.Repeat("x", maxLineBytes) + `"}` + "\n", "line 2: longer than"},
		{"empty", "\n\n", "no problems"},
	} {
		_, err := Read(strings.NewReader(tc.input))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	ps, err := Read(strings.NewReader(good + "\n"))
	if err != nil || len(ps) != 1 || ps[0].TaskID != "T/0" {
		t.Errorf("a good set: %v %+v", err, ps)
	}
}
