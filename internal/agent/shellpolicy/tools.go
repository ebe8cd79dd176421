package shellpolicy

import (
	"slices"
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

// checkCp lets cp read from anywhere and write only into the workspace:
// its destination is -t DIR (in any spelling) or the last operand.
func checkCp(c *checker, name string, args []*syntax.Word) {
	checkTarget(c, name, args, cpOptions, false)
}

// checkMv: mv writes its destination and removes its sources, so every
// operand and the -t directory must be in the workspace.
func checkMv(c *checker, name string, args []*syntax.Word) {
	checkTarget(c, name, args, mvOptions, true)
}

func checkTarget(c *checker, name string, args []*syntax.Word, spec getoptSpec, allOperands bool) {
	lits, ok := c.literals(name, args)
	if !ok {
		return
	}
	p, refusal := spec.parse(lits)
	if refusal != "" {
		c.refuse("%s: %s", name, refusal)
		return
	}
	if _, link := p.has("-s", "--symbolic-link"); link { // cp's; mv has no such option
		c.refuse("%s -s is not allowed: it makes a symbolic link, which can point outside the workspace (as ln would); copy the file instead", name)
		return
	}
	var written []string
	target, hasTarget := p.has("-t", "--target-directory")
	switch {
	case hasTarget && allOperands:
		written = append([]string{target.value}, p.rest...)
	case hasTarget:
		written = []string{target.value}
	case allOperands:
		written = p.rest
	case len(p.rest) > 0:
		written = p.rest[len(p.rest)-1:]
	}
	for _, w := range written {
		c.checkWritePath(w, false)
		if c.reason != "" {
			return
		}
	}
}

// checkSort refuses --compress-program (it runs a program) and keeps
// --output and --temporary-directory in the workspace, in every spelling
// sort accepts (-uo FILE, --out=FILE, --compress=sh).
func checkSort(c *checker, name string, args []*syntax.Word) {
	lits, ok := c.literals(name, args)
	if !ok {
		return
	}
	p, refusal := sortOptions.parse(lits)
	if refusal != "" {
		c.refuse("%s: %s", name, refusal)
		return
	}
	for _, o := range p.opts {
		switch o.name {
		case "--compress-program":
			c.refuse("sort --compress-program runs a program: sort without it")
			return
		case "-o", "--output":
			c.checkWritePath(o.value, true)
		case "-T", "--temporary-directory":
			c.checkWritePath(o.value, false)
		}
		if c.reason != "" {
			return
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
	if operands[0] == "-" || strings.HasPrefix(operands[0], "+") || (name == "pushd" && strings.HasPrefix(operands[0], "-")) {
		c.refuse("%s %s goes back to a directory the policy cannot see: give a workspace path", name, operands[0])
		return
	}
	if reason := outsideWorkspace(operands[0], false); reason != "" {
		c.refuse("%s %s leaves the workspace, and relative writes would follow it: stay in the workspace and read other places by absolute path", name, operands[0])
	}
}

// wrapped reads a wrapper's own options (its literal leading arguments)
// with spec and returns them and where, in args, the command it runs
// starts (len(args) when none does).
func (c *checker) wrapped(name string, spec getoptSpec, args []*syntax.Word) (parsed, int, bool) {
	var lits []string
	for _, w := range args {
		s, ok := literal(w)
		if !ok {
			break // a computed word: checked as the command, which refuses it
		}
		lits = append(lits, s)
	}
	p, refusal := spec.parse(lits)
	if refusal != "" {
		c.refuse("%s: %s", name, refusal)
		return p, 0, false
	}
	return p, len(lits) - len(p.rest), true
}

// wrapper resolves a command that runs another one after its own options
// and a fixed number of its own operands (timeout's duration); writes are
// its options that name a file it writes (GNU time -o).
func wrapper(spec getoptSpec, own int, writes ...string) func(c *checker, name string, args []*syntax.Word) {
	return func(c *checker, name string, args []*syntax.Word) {
		p, start, ok := c.wrapped(name, spec, args)
		if !ok {
			return
		}
		for _, o := range p.opts {
			if slices.Contains(writes, o.name) {
				c.checkWritePath(o.value, true)
			}
		}
		if start+own < len(args) && c.reason == "" {
			c.command(args[start+own:])
		}
	}
}

// checkEnv resolves env: its assignments are checked like the shell's, and
// -S (a string split into a command) and -C (a directory change) are
// refused, in any spelling env accepts (-iS'...', --split=...).
func checkEnv(c *checker, name string, args []*syntax.Word) {
	p, start, ok := c.wrapped(name, envOptions, args)
	if !ok {
		return
	}
	if _, split := p.has("-S", "--split-string"); split {
		c.refuse("env -S splits a string into a command, which the policy cannot check: write the command directly")
		return
	}
	if _, chdir := p.has("-C", "--chdir"); chdir {
		c.refuse("env -C changes directory: use cd with a workspace path")
		return
	}
	for i := start; i < len(args); i++ {
		s, ok := literal(args[i])
		if !ok || !strings.Contains(s, "=") {
			c.command(args[i:])
			return
		}
		if c.checkName(s); c.reason != "" {
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

// checkXargs allows only read-only tools under xargs: the arguments come
// from its input, which the policy cannot see.
func checkXargs(c *checker, name string, args []*syntax.Word) {
	_, start, ok := c.wrapped(name, xargsOptions, args)
	if !ok || start >= len(args) {
		return
	}
	inner, ok := literal(args[start])
	if !ok {
		c.command(args[start:])
		return
	}
	if base := inner[strings.LastIndexByte(inner, '/')+1:]; !c.rules[base].pure {
		c.refuse("xargs may run only read-only tools (cat, grep, wc, ls, head, ...), not %s: its arguments come from input the policy cannot see; loop over the paths with an allowed command instead", inner)
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
		if (name == "mapfile" || name == "readarray") && strings.HasPrefix(s, "-") && strings.ContainsRune(s[1:], 'C') {
			// -C names a command bash runs for each line read: code, not a name.
			c.refuse("%s -C is not allowed: its callback is a command the policy cannot check; read the lines and loop over them", name)
			return
		}
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
