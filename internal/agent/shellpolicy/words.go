package shellpolicy

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// literal returns a word's value after quote removal when nothing in it is
// decided at run time: only plain text, '...', $'...' and "..." holding plain
// text. Quotes, backslashes and ANSI-C strings are decoded: "cu"rl, \curl and
// $'\x63url' all read as curl, as does curl with an empty quoted pair inside.
func literal(w *syntax.Word) (string, bool) {
	if w == nil || len(w.Parts) == 0 {
		return "", false
	}
	if lit, ok := w.Parts[0].(*syntax.Lit); ok && strings.HasPrefix(lit.Value, "~") {
		return "", false // tilde expansion depends on HOME
	}
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value, func(byte) bool { return true }))
		case *syntax.SglQuoted:
			if !p.Dollar {
				b.WriteString(p.Value)
				continue
			}
			s, err := expand.Literal(&expand.Config{}, &syntax.Word{Parts: []syntax.WordPart{p}})
			if err != nil {
				return "", false
			}
			b.WriteString(s)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(unescape(lit.Value, func(c byte) bool { return strings.IndexByte("$`\"\\\n", c) >= 0 }))
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// unescape removes the backslashes the shell removes: before any character
// outside quotes, before $ ` " \ and newline inside double quotes. A
// backslash-newline disappears altogether.
func unescape(s string, escapes func(byte) bool) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && escapes(s[i+1]) {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// literals reads every word literally, or refuses naming the command.
func (c *checker) literals(name string, words []*syntax.Word) ([]string, bool) {
	out := make([]string, 0, len(words))
	for _, w := range words {
		s, ok := literal(w)
		if !ok {
			c.refuse("%s arguments must be literal here (no variables, substitutions, ~ or braces) so the policy can check them", name)
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// checkTestOperand refuses test -v on a name whose subscript runs a command.
func (c *checker) checkTestOperand(w *syntax.Word) {
	if s, ok := literal(w); ok && runsSubscript(s) {
		c.refuse("an array subscript with a command substitution runs a command: write the command out directly")
	}
}

// devices are the files outside the workspace a command may write to.
var devices = map[string]bool{"/dev/null": true, "/dev/stdout": true, "/dev/stderr": true}

// writePath refuses a write target that is not a literal path in the workspace.
func (c *checker) writePath(w *syntax.Word, allowDevices bool) {
	if lit, ok := w.Parts[0].(*syntax.Lit); ok && strings.HasPrefix(lit.Value, "~") {
		c.refuse("%s is outside the workspace (~ is the home directory): write to a relative path", lit.Value)
		return
	}
	p, ok := literal(w)
	if !ok {
		c.refuse("a file written to must be a literal path, not a variable, substitution or brace expansion: write the relative path itself")
		return
	}
	c.checkWritePath(p, allowDevices)
}

// checkWritePath refuses a path outside the workspace.
func (c *checker) checkWritePath(p string, allowDevices bool) {
	if reason := outsideWorkspace(p, allowDevices); reason != "" {
		c.refuse("%s", reason)
	}
}

// outsideWorkspace says why p is not in the workspace, or "" when it is.
func outsideWorkspace(p string, allowDevices bool) string {
	switch {
	case p == "":
		return "an empty path cannot be written to"
	case strings.HasPrefix(p, "~"):
		return p + " is outside the workspace (~ is the home directory): write to a relative path"
	case path.IsAbs(p):
		clean := path.Clean(p)
		if clean == Workspace || strings.HasPrefix(clean, Workspace+"/") || (allowDevices && devices[clean]) {
			return ""
		}
		return p + " is outside the workspace: write only to relative paths in the workspace (" + Workspace + ")"
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return p + " leaves the workspace with ..: write only to paths inside the workspace"
	}
	return ""
}

// protectedNames may not be assigned: they change which programs run, what
// they load, or how the shell reads the rest of the line.
var protectedNames = map[string]bool{
	"PATH": true, "IFS": true, "ENV": true, "BASH_ENV": true, "CDPATH": true,
	"PROMPT_COMMAND": true, "PS1": true, "PS2": true, "PS3": true, "PS4": true,
	"SHELLOPTS": true, "BASHOPTS": true, "GLOBIGNORE": true, "HOME": true,
	"EXECIGNORE": true, "BASH_LOADABLES_PATH": true,
	// cd - goes to OLDPWD and popd to DIRSTACK: set, they lead out of the workspace
	"OLDPWD": true, "DIRSTACK": true,
}

// protectedPrefixes cover families: the dynamic loader, Python's start-up,
// exported functions, and package tools' indexes.
var protectedPrefixes = []string{"LD_", "PYTHON", "PYTEST_", "BASH_FUNC_", "PIP_", "UV_"}

func protected(name string) bool {
	if i := strings.IndexAny(name, "[="); i >= 0 {
		name = name[:i]
	}
	if protectedNames[name] {
		return true
	}
	for _, p := range protectedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// runsSubscript reports a name whose array subscript holds a command
// substitution: bash evaluates it when it assigns or tests the name.
func runsSubscript(name string) bool {
	return strings.Contains(name, "[") && (strings.Contains(name, "$(") || strings.Contains(name, "`"))
}

func (c *checker) checkName(name string) {
	if runsSubscript(name) {
		c.refuse("an array subscript with a command substitution runs a command: write the command out directly")
		return
	}
	if protected(name) {
		c.refuse("setting %s is not allowed: it changes which programs run or what they load; use the environment as it is", strings.SplitN(name, "=", 2)[0])
	}
}
