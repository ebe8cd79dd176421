package shellpolicy

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// checkSed reads sed's options and script as sed does (getopt.go): -i
// writes its files (workspace only), -f hides the script, and the script's
// e and w commands (and the s command's e and w flags) run commands or
// write files.
func checkSed(c *checker, name string, args []*syntax.Word) {
	lits, ok := c.literals(name, args)
	if !ok {
		return
	}
	p, refusal := sedOptions.parse(lits)
	if refusal != "" {
		c.refuse("%s: %s", name, refusal)
		return
	}
	if _, hidden := p.has("-f", "--file"); hidden {
		c.refuse("sed -f runs a script file the policy cannot see: give the script inline")
		return
	}
	var scripts []string
	for _, o := range p.opts {
		if o.name == "-e" || o.name == "--expression" {
			scripts = append(scripts, o.value)
		}
	}
	files := p.rest
	if len(scripts) == 0 && len(files) > 0 {
		scripts, files = files[:1], files[1:]
	}
	for _, s := range scripts {
		if !sedScriptSafe(s) {
			c.refuse("this sed script uses e or w, which run commands or write files: use sed only to edit text, or write a Python script")
			return
		}
	}
	if _, inPlace := p.has("-i", "--in-place"); inPlace {
		for _, f := range files {
			c.checkWritePath(f, false)
		}
	}
}

// sedScriptSafe scans a sed script command by command and reports whether it
// avoids e (run a command), w/W (write a file) and the s flags e and w.
func sedScriptSafe(script string) bool {
	i := 0
	for i < len(script) {
		i = skipSedAddress(script, i)
		if i >= len(script) {
			return true
		}
		cmd := script[i]
		i++
		switch cmd {
		case 'e', 'w', 'W':
			return false
		case 's', 'y':
			var flags string
			i, flags = skipSedSubst(script, i, cmd == 's')
			if strings.ContainsAny(flags, "ew") {
				return false
			}
		case 'a', 'i', 'c', ':', 'b', 't', 'T', 'r', 'R', '#':
			i = skipToLineEnd(script, i, cmd == 'a' || cmd == 'i' || cmd == 'c' || cmd == '#')
		}
	}
	return true
}

// skipSedAddress skips separators, line numbers, $, /regex/ and \cregexc.
func skipSedAddress(s string, i int) int {
	for i < len(s) {
		switch ch := s[i]; {
		case strings.IndexByte(" \t\n;{}!,~+$0123456789", ch) >= 0:
			i++
		case ch == '/' || ch == '\\':
			delim := byte('/')
			if ch == '\\' && i+1 < len(s) {
				i++
				delim = s[i]
			}
			i = skipDelimited(s, i+1, delim)
			for i < len(s) && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		default:
			return i
		}
	}
	return i
}

// skipSedSubst skips the parts of s/re/repl/ or y/a/b/ and returns s's flags.
func skipSedSubst(s string, i int, hasFlags bool) (int, string) {
	if i >= len(s) {
		return i, ""
	}
	delim := s[i]
	i = skipDelimited(s, i+1, delim)
	i = skipDelimited(s, i, delim)
	if !hasFlags {
		return i, ""
	}
	start := i
	for i < len(s) && strings.IndexByte(";\n}", s[i]) < 0 {
		i++
	}
	return i, s[start:i]
}

// skipDelimited returns the index after the next unescaped delim.
func skipDelimited(s string, i int, delim byte) int {
	for i < len(s) {
		switch s[i] {
		case '\\':
			i = min(i+2, len(s)) // a trailing backslash ends the script
			continue
		case delim:
			return i + 1
		}
		i++
	}
	return i
}

// skipToLineEnd skips a label or file name (to ; or newline) or, for text
// commands, to the end of the line.
func skipToLineEnd(s string, i int, wholeLine bool) int {
	for i < len(s) && s[i] != '\n' && (wholeLine || s[i] != ';') {
		i++
	}
	return i
}

// awkRefused are the parts of an awk program that run commands, read their
// output, write files or load code. '>' also catches comparisons: a refusal
// there costs the model a rewrite in Python, an allowance could cost a write
// outside the workspace.
var awkRefused = []string{"system", "getline", "|", ">", "@load", "@include"}

// checkAwk refuses program files and extensions (-f, -E, -i, -l and
// gawk's debugger script -D), output files outside the workspace (gawk's
// --dump-variables, --pretty-print and --profile write one), and programs
// using awkRefused.
func checkAwk(c *checker, name string, args []*syntax.Word) {
	lits, ok := c.literals(name, args)
	if !ok {
		return
	}
	p, refusal := awkOptions.parse(lits)
	if refusal != "" {
		c.refuse("%s: %s", name, refusal)
		return
	}
	var programs []string
	for _, o := range p.opts {
		switch o.name {
		case "-f", "--file", "-E", "--exec", "-i", "--include", "-l", "--load", "-D", "--debug":
			c.refuse("%s %s runs a program file or extension the policy cannot see: give the program inline", name, o.name)
			return
		case "-d", "--dump-variables", "-o", "--pretty-print", "-p", "--profile":
			if o.hasValue {
				c.checkWritePath(o.value, true)
			}
		case "-e", "--source":
			programs = append(programs, o.value)
		}
	}
	if len(programs) == 0 && len(p.rest) > 0 {
		programs = p.rest[:1]
	}
	for _, prog := range programs {
		for _, bad := range awkRefused {
			if strings.Contains(prog, bad) {
				c.refuse("awk programs may not use %s (system, getline, | and > can run commands or write files; > is refused even as a comparison): write a Python script instead", bad)
				return
			}
		}
	}
}
