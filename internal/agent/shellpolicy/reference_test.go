package shellpolicy_test

import (
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/agent/shellpolicy"
)

// referenceSafe is the reference agent backend's allow-list
// (flyteplugins-codegen, execution/agent_sdk.py SAFE_PREFIXES).
var referenceSafe = map[string]bool{
	"ls": true, "pwd": true, "cat": true, "head": true, "tail": true, "grep": true, "wc": true,
	"mkdir": true, "touch": true, "rm": true, "mv": true, "cp": true, "echo": true, "sed": true,
	"awk": true, "find": true,
}

// referenceVerdict is the reference's whole shell policy
// (_classify_bash_command): split the command as Python's shlex.split does,
// then "pytest" anywhere intercepts the command, a first word in the
// allow-list runs it on the host, and anything else is denied.
func referenceVerdict(cmd string) string {
	words, ok := shlexSplit(cmd)
	switch {
	case !ok || len(words) == 0:
		return "deny"
	case words[0] == "pytest" || contains(words, "pytest"):
		return "pytest"
	case referenceSafe[words[0]]:
		return "allow"
	}
	return "deny"
}

func contains(words []string, w string) bool {
	for _, x := range words {
		if x == w {
			return true
		}
	}
	return false
}

// shlexSplit is Python's shlex.split in POSIX mode: words split on
// whitespace, single quotes literal, double quotes with \" \\ \$ \`
// escapes, a backslash outside quotes escaping the next character, and an
// unterminated quote an error. Operators are ordinary characters, which is
// why "cat x && curl y" starts with cat.
func shlexSplit(s string) ([]string, bool) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\\':
			if i+1 >= len(s) {
				return nil, false
			}
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, false
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, false
			}
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, true
}

func TestShlexSplitModel(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`cat x && curl y`:          "cat|x|&&|curl|y",
		`c''url "a b" \$x`:         "curl|a b|$x",
		`awk 'BEGIN{system("x")}'`: `awk|BEGIN{system("x")}`,
	} {
		got, ok := shlexSplit(in)
		if !ok || strings.Join(got, "|") != want {
			t.Errorf("shlexSplit(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if _, ok := shlexSplit(`echo 'open`); ok {
		t.Error("an unterminated quote splits")
	}
}

// TestReferenceLetsThrough runs the reference's check over the table: every
// command it would run on the host, or hand to its sandbox as pytest while
// running the rest of the line, that the policy here refuses. The issue asks
// the table to hold each kind of escape the first-word check misses.
func TestReferenceLetsThrough(t *testing.T) {
	t.Parallel()
	kinds := map[string][]string{
		"chain":         {"&&", ";", "||"},
		"pipe":          {"|"},
		"substitution":  {"$(", "`", "<("},
		"redirect out":  {"> /", ">> ../", "&> /", "> ~"},
		"find -exec":    {"-exec"},
		"awk system":    {"system("},
		"xargs":         {"xargs"},
		"here-document": {"<<"},
		"escaping":      {`\`, `''`},
		"outside write": {"/etc/", "/tmp/"},
	}
	seen := map[string]int{}
	missed := 0
	for _, tc := range verdictCases {
		ref := referenceVerdict(tc.command)
		if tc.allowed || ref == "deny" {
			continue
		}
		missed++
		if v := shellpolicy.Check(tc.command); v.Allowed {
			t.Errorf("%q: the reference lets it through (%s) and so does Check", tc.command, ref)
		}
		for kind, marks := range kinds {
			for _, mk := range marks {
				if strings.Contains(tc.command, mk) {
					seen[kind]++
					break
				}
			}
		}
		t.Logf("reference %-6s here denied: %q", ref, tc.command)
	}
	if missed < 40 {
		t.Errorf("the table holds %d commands the reference lets through; want at least 40", missed)
	}
	for kind := range kinds {
		if seen[kind] == 0 {
			t.Errorf("no command of kind %q that the reference lets through", kind)
		}
	}
	t.Logf("%d of %d table commands pass the reference's first-word check and are refused here", missed, len(verdictCases))
}
