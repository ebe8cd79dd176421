package shellpolicy

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// checkSed reads sed's options and script: -i writes its files (workspace
// only), -f hides the script, and the script's e and w commands (and the s
// command's e and w flags) run commands or write files.
func checkSed(c *checker, name string, args []*syntax.Word) {
	lits, ok := c.literals(name, args)
	if !ok {
		return
	}
	a, ok := readSedArgs(c, lits)
	if !ok {
		return
	}
	for _, s := range a.scripts {
		if !sedScriptSafe(s) {
			c.refuse("this sed script uses e or w, which run commands or write files: use sed only to edit text, or write a Python script")
			return
		}
	}
	if a.inPlace {
		for _, o := range a.files {
			c.checkWritePath(o, false)
		}
	}
}

// sedArgs is a sed command line read: its scripts, its files, and whether it edits them in place.
type sedArgs struct {
	scripts, files []string
	inPlace        bool
}

func readSedArgs(c *checker, lits []string) (sedArgs, bool) {
	var a sedArgs
	for i := 0; i < len(lits); i++ {
		s := lits[i]
		switch {
		case s == "--":
			a.files = append(a.files, lits[i+1:]...)
			i = len(lits)
		case s == "-f" || strings.HasPrefix(s, "--file"):
			c.refuse("sed -f runs a script file the policy cannot see: give the script inline")
			return a, false
		case strings.HasPrefix(s, "--in-place"):
			a.inPlace = true
		case (s == "-e" || s == "--expression") && i+1 < len(lits):
			i++
			a.scripts = append(a.scripts, lits[i])
		case strings.HasPrefix(s, "--expression="):
			a.scripts = append(a.scripts, strings.TrimPrefix(s, "--expression="))
		case strings.HasPrefix(s, "--"):
		case strings.HasPrefix(s, "-") && len(s) > 1:
			script, takesNext, in, refused := sedCluster(c, s[1:])
			if refused {
				return a, false
			}
			a.inPlace = a.inPlace || in
			if takesNext && i+1 < len(lits) {
				i++
				script = lits[i]
			}
			if script != "" || takesNext {
				a.scripts = append(a.scripts, script)
			}
		default:
			a.files = append(a.files, s)
		}
	}
	if len(a.scripts) == 0 && len(a.files) > 0 {
		a.scripts, a.files = a.files[:1], a.files[1:]
	}
	return a, true
}

// sedCluster reads a cluster of short options such as -ne or -i.bak.
func sedCluster(c *checker, cluster string) (script string, takesNext, inPlace, refused bool) {
	for j, r := range cluster {
		switch r {
		case 'i':
			return "", false, true, false // the rest is the backup suffix
		case 'f':
			c.refuse("sed -f runs a script file the policy cannot see: give the script inline")
			return "", false, false, true
		case 'e':
			if rest := cluster[j+1:]; rest != "" {
				return rest, false, inPlace, false
			}
			return "", true, inPlace, false
		case 'l':
			return "", false, inPlace, false // line length: the value follows
		}
	}
	return "", false, inPlace, false
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

// checkAwk refuses -f (a program file) and programs using awkRefused.
func checkAwk(c *checker, name string, args []*syntax.Word) {
	lits, ok := c.literals(name, args)
	if !ok {
		return
	}
	var programs []string
	var operands []string
	for i := 0; i < len(lits); i++ {
		s := lits[i]
		switch {
		case awkLoadsFile(s):
			c.refuse("%s %s runs a program file or extension the policy cannot see: give the program inline", name, s)
			return
		case s == "-e" || s == "--source":
			if i+1 < len(lits) {
				i++
				programs = append(programs, lits[i])
			}
		case s == "-F" || s == "-v":
			i++
		case s == "--":
			operands = append(operands, lits[i+1:]...)
			i = len(lits)
		case strings.HasPrefix(s, "-") && len(s) > 1:
		default:
			operands = append(operands, s)
		}
	}
	if len(programs) == 0 && len(operands) > 0 {
		programs = operands[:1]
	}
	for _, p := range programs {
		for _, bad := range awkRefused {
			if strings.Contains(p, bad) {
				c.refuse("awk programs may not use %s (system, getline, | and > can run commands or write files; > is refused even as a comparison): write a Python script instead", bad)
				return
			}
		}
	}
}

// awkLoadsFile reports the options that read program source or load native
// extensions from files: -f, -E, -i, -l and their long forms (gawk).
func awkLoadsFile(opt string) bool {
	for _, p := range []string{"--file", "--exec", "--include", "--load", "-f", "-E", "-i", "-l"} {
		if strings.HasPrefix(opt, p) {
			return true
		}
	}
	return false
}
