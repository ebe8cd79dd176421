package messages_test

import (
	"strings"
	"testing"

	"github.com/autocoder/autocoder/pkg/messages"
)

const (
	sgrRed   = "\x1b[31m"         // recolours the terminal
	oscTitle = "\x1b]0;title\x07" // retitles the window
)

func TestPrintable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"plain text\nline two\tcol", "plain text\nline two\tcol"},
		{"red " + sgrRed + "text", `red \x1b[31mtext`},
		{oscTitle, `\x1b]0;title\a`},
		{"csi \u009b2J", `csi \u009b2J`},
		{"cr\roverwrite", `cr\roverwrite`},
		{"rtl \u202eevil", `rtl \u202eevil`},
		{"bad \xff byte", `bad \xff byte`},
		{"ünïcödé ✓", "ünïcödé ✓"},
	} {
		if got := messages.Printable(tc.in); got != tc.want {
			t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestQuoteName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"outputs.total", "outputs.total"},
		{"my name", "my name"},
		{"outputs." + sgrRed, `"outputs.\x1b[31m"`},
		{oscTitle, `"\x1b]0;title\a"`},
	} {
		if got := messages.QuoteName(tc.in); got != tc.want {
			t.Errorf("QuoteName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestFieldErrorsAreEscaped: an unknown or invalid field name and a value
// from a job file reach the terminal escaped, whatever they hold.
func TestFieldErrorsAreEscaped(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{
		`{"prompt":"p","` + sgrRed + `":1}`,
		`{"prompt":"p","options":{"` + oscTitle + `":1}}`,
		`{"prompt":"p","outputs":{"` + sgrRed + `x":"int"}}`,
		`{"prompt":"p","inputs":{"` + oscTitle + `":"int"}}`,
		`{"prompt":"p","outputs":{"x":"` + sgrRed + `"}}`,
		`{"prompt":"p","options":{"cache":"` + oscTitle + `"}}`,
	} {
		_, err := messages.DecodeJobSpecJSON([]byte(strings.NewReplacer("\x1b", `\u001b`, "\x07", `\u0007`).Replace(spec)))
		if err == nil {
			t.Errorf("%q: no error", spec)
			continue
		}
		if msg := err.Error(); strings.ContainsAny(msg, "\x1b\x07") {
			t.Errorf("%q: error %q holds raw control characters", spec, msg)
		} else if !strings.Contains(msg, `\x1b`) {
			t.Errorf("%q: error %q does not show the escape", spec, msg)
		}
	}
}
