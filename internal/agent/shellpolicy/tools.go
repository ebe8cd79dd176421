package shellpolicy

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// options splits literal arguments into options and operands: "--" ends the
// options, and valued options take the next argument with them.
func options(args []string, valued map[string]bool) (opts, operands []string) {
	for i := 0; i < len(args); i++ {
		s := args[i]
		switch {
		case s == "--":
			return opts, append(operands, args[i+1:]...)
		case strings.HasPrefix(s, "-") && s != "-":
			opts = append(opts, s)
			if valued[s] && i+1 < len(args) {
				i++
				opts = append(opts, args[i])
			}
		default:
			operands = append(operands, s)
		}
	}
	return opts, operands
}

// writeAll checks a tool that writes to every operand (tee, rm, mkdir, ...).
func writeAll(allowDevices bool) func(c *checker, name string, args []*syntax.Word) {
	return func(c *checker, _ string, args []*syntax.Word) {
		optionsDone := false
		for _, w := range args {
			if s, ok := literal(w); ok && !optionsDone && strings.HasPrefix(s, "-") {
				optionsDone = s == "--"
				continue
			}
			c.writePath(w, allowDevices)
		}
	}
}

// checkCp lets cp read from anywhere and write only into the workspace.
func checkCp(c *checker, name string, args []*syntax.Word) {
	lits, ok := c.literals(name, args)
	if !ok {
		return
	}
	opts, operands := options(lits, nil)
	for _, o := range opts {
		if strings.HasPrefix(o, "--target") || (!strings.HasPrefix(o, "--") && strings.Contains(o, "t")) {
			c.refuse("cp -t is not allowed here: put the destination last, as a path in the workspace")
			return
		}
	}
	if len(operands) > 0 {
		c.checkWritePath(operands[len(operands)-1], false)
	}
}

func checkSort(c *checker, name string, args []*syntax.Word) {
	lits, ok := c.literals(name, args)
	if !ok {
		return
	}
	for i, s := range lits {
		switch {
		case strings.HasPrefix(s, "--compress-prog"):
			c.refuse("sort --compress-program runs a program: sort without it")
			return
		case (s == "-o" || s == "--output") && i+1 < len(lits):
			c.checkWritePath(lits[i+1], true)
		case strings.HasPrefix(s, "--output="):
			c.checkWritePath(strings.TrimPrefix(s, "--output="), true)
		case strings.HasPrefix(s, "-o") && len(s) > 2:
			c.checkWritePath(s[2:], true)
		}
	}
}

// checkUniq: uniq IN OUT writes OUT.
func checkUniq(c *checker, name string, args []*syntax.Word) {
	lits, ok := c.literals(name, args)
	if !ok {
		return
	}
	if _, operands := options(lits, nil); len(operands) > 1 {
		c.checkWritePath(operands[1], true)
	}
}

func checkFind(c *checker, name string, args []*syntax.Word) {
	lits, ok := c.literals(name, args)
	if !ok {
		return
	}
	for _, s := range lits {
		switch s {
		case "-exec", "-execdir", "-ok", "-okdir":
			c.refuse("find %s runs commands, which the policy cannot check: list the paths with find and act on them with an allowed command (or xargs with a read-only tool)", s)
			return
		case "-delete", "-fprint", "-fprint0", "-fprintf", "-fls":
			c.refuse("find %s deletes or writes files: list the paths with find, then use rm or a redirection on workspace paths", s)
			return
		}
	}
}

// checkCd keeps the working directory in the workspace, so that relative
// paths written to stay inside it.
func checkCd(c *checker, name string, args []*syntax.Word) {
	lits, ok := c.literals(name, args)
	if !ok {
		return
	}
	_, operands := options(lits, nil)
	if len(operands) == 0 {
		c.refuse("%s without a path goes to the home directory, outside the workspace: give a workspace path", name)
		return
	}
	if operands[0] == "-" {
		return
	}
	if reason := outsideWorkspace(operands[0], false); reason != "" {
		c.refuse("%s %s leaves the workspace, and relative writes would follow it: stay in the workspace and read other places by absolute path", name, operands[0])
	}
}

// wrapper resolves a command that runs another one after its own options and
// a fixed number of its own operands (timeout's duration).
func wrapper(valued map[string]bool, own int) func(c *checker, name string, args []*syntax.Word) {
	return func(c *checker, name string, args []*syntax.Word) {
		own := own // per call: the closure is shared
		for i := 0; i < len(args); i++ {
			s, ok := literal(args[i])
			switch {
			case !ok:
				c.command(args[i:]) // refuses a computed command name with its own reason
				return
			case s == "--":
			case strings.HasPrefix(s, "-") && len(s) > 1:
				if valued[s] {
					i++
				}
			case own > 0:
				own--
			default:
				c.command(args[i:])
				return
			}
		}
	}
}

// checkEnv resolves env: its assignments are checked like the shell's, and
// -S (a string split into a command) and -C (a directory change) are refused.
func checkEnv(c *checker, name string, args []*syntax.Word) {
	for i := 0; i < len(args); i++ {
		s, ok := literal(args[i])
		switch {
		case !ok:
			c.command(args[i:])
			return
		case strings.HasPrefix(s, "-S") || strings.HasPrefix(s, "--split-string"):
			c.refuse("env -S splits a string into a command, which the policy cannot check: write the command directly")
			return
		case strings.HasPrefix(s, "-C") || strings.HasPrefix(s, "--chdir"):
			c.refuse("env -C changes directory: use cd with a workspace path")
			return
		case s == "-u" || s == "--unset":
			i++
		case strings.HasPrefix(s, "-"):
		case strings.Contains(s, "="):
			c.checkName(s)
			if c.reason != "" {
				return
			}
		default:
			c.command(args[i:])
			return
		}
	}
}

// checkCommand: command -v/-V only looks a name up; otherwise it runs it.
func checkCommand(c *checker, name string, args []*syntax.Word) {
	for i, w := range args {
		s, ok := literal(w)
		switch {
		case ok && (s == "-v" || s == "-V"):
			return
		case ok && strings.HasPrefix(s, "-"):
		default:
			c.command(args[i:])
			return
		}
	}
}

// xargsValued are xargs options whose value is the next argument.
var xargsValued = map[string]bool{
	"-I": true, "-n": true, "-P": true, "-L": true, "-s": true, "-d": true, "-E": true, "-a": true,
	"--arg-file": true, "--delimiter": true, "--max-args": true, "--max-procs": true,
	"--max-lines": true, "--max-chars": true, "--eof": true,
}

// checkXargs allows only read-only tools under xargs: the arguments come
// from its input, which the policy cannot see.
func checkXargs(c *checker, name string, args []*syntax.Word) {
	for i := 0; i < len(args); i++ {
		s, ok := literal(args[i])
		switch {
		case ok && xargsValued[s]:
			i++
		case ok && strings.HasPrefix(s, "-"):
		default:
			inner, ok := literal(args[i])
			if !ok {
				c.command(args[i:])
				return
			}
			if base := inner[strings.LastIndexByte(inner, '/')+1:]; !c.rules[base].pure {
				c.refuse("xargs may run only read-only tools (cat, grep, wc, ls, head, ...), not %s: its arguments come from input the policy cannot see; loop over the paths with an allowed command instead", inner)
			}
			return
		}
	}
}

// checkShell parses bash -c strings in turn; a shell reading a script file
// or its input runs commands the policy cannot see.
func checkShell(c *checker, name string, args []*syntax.Word) {
	for i := 0; i < len(args); i++ {
		s, ok := literal(args[i])
		if !ok {
			break
		}
		if s == "-o" || s == "+o" {
			i++
			continue
		}
		if strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "--") && strings.Contains(s, "c") {
			c.nested(name, args[i+1:])
			return
		}
		if !strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "+") {
			break
		}
	}
	c.refuse("running %s on a script file or on its input is not allowed: the policy cannot see those commands; run them directly (or with %s -c '...')", name, name)
}

func (c *checker) nested(name string, args []*syntax.Word) {
	if len(args) == 0 {
		c.refuse("%s -c needs a command string", name)
		return
	}
	s, ok := literal(args[0])
	if !ok {
		c.refuse("%s -c with a variable or substituted string is not allowed: write the commands literally", name)
		return
	}
	if c.depth >= maxNesting {
		c.refuse("%s -c is nested too deeply: run the commands directly", name)
		return
	}
	c.depth++
	c.source(s)
	c.depth--
}

func checkGit(c *checker, name string, args []*syntax.Word) {
	lits, _ := c.literals(name, args)
	_, operands := options(lits, nil)
	if len(operands) > 0 {
		switch operands[0] {
		case "clone", "fetch", "pull", "push", "ls-remote", "remote", "submodule":
			c.refuse("git %s uses the network: the sandbox has no network; write code instead, using the files in the workspace", operands[0])
			return
		}
	}
	c.refuse("git is not available: the workspace is not a repository; use ls, cat, diff and the file tools")
}

// checkAssigning refuses builtins that assign to a protected name (read PATH)
// or to a name decided at run time.
func checkAssigning(c *checker, name string, args []*syntax.Word) {
	lits, ok := c.literals(name, args)
	if !ok {
		return
	}
	for _, s := range lits {
		c.checkName(strings.TrimPrefix(s, "-v"))
	}
}

// checkPrintf allows any arguments except a protected -v target.
func checkPrintf(c *checker, name string, args []*syntax.Word) {
	for i, w := range args {
		s, ok := literal(w)
		if !ok || !strings.HasPrefix(s, "-v") {
			continue
		}
		target := strings.TrimPrefix(s, "-v")
		if target == "" {
			if i+1 >= len(args) {
				return
			}
			if target, ok = literal(args[i+1]); !ok {
				c.refuse("printf -v with a computed variable name is not allowed: write the name literally")
				return
			}
		}
		c.checkName(target)
	}
}

// checkTest: test -v evaluates an array subscript, and with it a command substitution.
func checkTest(c *checker, _ string, args []*syntax.Word) {
	for _, w := range args {
		c.checkTestOperand(w)
	}
}
