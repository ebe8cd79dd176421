package shellpolicy

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Workspace is where the sandbox mounts the job's workspace and the directory
// every command starts in. Absolute paths are inside the workspace only under it.
const Workspace = "/workspace"

// maxNesting bounds bash -c inside bash -c, so a hostile command cannot make
// the check recurse without end.
const maxNesting = 4

// Verdict is the policy's answer for one command.
type Verdict struct {
	// Allowed is true when every command in the input may run.
	Allowed bool
	// Reason says why a command was refused, for the model; empty when allowed.
	Reason string
	// Pytest is true when the command runs pytest (pytest, py.test or
	// python -m pytest) anywhere: the caller runs it as the job's test stage.
	// Always false when the command is refused.
	Pytest bool
}

// Check parses command as bash and checks every command in it.
func Check(command string) Verdict {
	c := &checker{rules: rules}
	c.source(command)
	if c.reason != "" {
		return Verdict{Reason: c.reason} // nothing runs, so no test stage either
	}
	return Verdict{Allowed: true, Pytest: c.pytest}
}

// checker walks one command line; the first refusal wins.
type checker struct {
	rules  map[string]rule // the package's rules, held here to keep its initialisation acyclic
	depth  int             // how many bash -c levels deep
	reason string
	pytest bool
}

func (c *checker) refuse(format string, args ...any) {
	if c.reason == "" {
		c.reason = fmt.Sprintf(format, args...)
	}
}

// source parses and checks a command string (the tool's input or a bash -c argument).
func (c *checker) source(command string) {
	if strings.ContainsRune(command, 0) {
		c.refuse("the command contains a NUL byte")
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil {
		c.refuse("cannot parse the command (%v): write plain bash, or put the logic in a Python file", err)
		return
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		if c.reason == "" {
			c.node(n)
		}
		return c.reason == ""
	})
}

// node checks one syntax node; Walk brings every nested node here.
func (c *checker) node(n syntax.Node) {
	switch n := n.(type) {
	case *syntax.CallExpr:
		if len(n.Args) > 0 {
			c.command(splitBraces(n.Args...))
		}
	case *syntax.Redirect:
		c.redirect(n)
	case *syntax.Assign:
		c.assign(n)
	case *syntax.DeclClause:
		c.decl(n)
	case *syntax.WordIter: // for NAME in ...; select NAME in ...
		c.checkName(n.Name.Value)
	case *syntax.BinaryArithm:
		if isArithAssign(n.Op) {
			c.arithTarget(n.X)
		}
	case *syntax.UnaryArithm:
		if n.Op == syntax.Inc || n.Op == syntax.Dec {
			c.arithTarget(n.X)
		}
	case *syntax.ParamExp:
		if n.Param != nil && n.Exp != nil && (n.Exp.Op == syntax.AssignUnset || n.Exp.Op == syntax.AssignUnsetOrNull) {
			c.checkName(n.Param.Value) // ${LD_PRELOAD:=x} assigns
		}
	case *syntax.UnaryTest:
		if n.Op == syntax.TsVarSet {
			if w, ok := n.X.(*syntax.Word); ok {
				c.checkTestOperand(w)
			}
		}
	case *syntax.FuncDecl:
		c.refuse("defining functions is not allowed: a function can shadow a command name; write the commands out directly")
	case *syntax.CoprocClause:
		c.refuse("coproc is not allowed: run the command directly")
	case *syntax.TestDecl:
		c.refuse("test declarations are not bash: write plain bash")
	}
}

// command checks one simple command: its name, resolved, against the rules.
func (c *checker) command(words []*syntax.Word) {
	name, ok := literal(words[0])
	if !ok || name == "" || (name != "[" && strings.ContainsAny(name, "*?[")) {
		c.refuse("the command name must be a literal word, not a variable, substitution or pattern: write the name of the command itself")
		return
	}
	base := name
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		base = name[i+1:]
		if !systemDirs[name[:i]] {
			c.refuse("running %s directly is not allowed: run Python files with python3 FILE.py and tests with pytest", name)
			return
		}
	}
	if strings.HasPrefix(base, "python3.") {
		base = "python3" // python3.11 and the like
	}
	r, found := c.rules[base]
	if !found {
		c.refuse("%s", notAllowed(base))
		return
	}
	if r.check != nil {
		r.check(c, base, words[1:])
	}
}

// systemDirs are where a command named by absolute path may come from; a
// workspace file named cat is not cat.
var systemDirs = map[string]bool{"/bin": true, "/usr/bin": true, "/usr/local/bin": true, "/sbin": true, "/usr/sbin": true}

// redirect checks where a redirection writes.
func (c *checker) redirect(r *syntax.Redirect) {
	if r.N != nil && strings.HasPrefix(r.N.Value, "{") {
		c.checkName(strings.Trim(r.N.Value, "{}"))
	}
	if r.Word == nil {
		return
	}
	word := splitBraces(r.Word)[0]
	if lit, ok := literal(word); ok && (strings.HasPrefix(path.Clean(lit), "/dev/tcp/") || strings.HasPrefix(path.Clean(lit), "/dev/udp/")) {
		c.refuse("%s is a network connection: the sandbox has no network; write code instead, using the files in the workspace", lit)
		return
	}
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrInOut, syntax.RdrAll, syntax.AppAll,
		syntax.RdrClob, syntax.RdrAllClob, syntax.AppAllClob:
		c.writePath(word, true)
	case syntax.DplOut:
		if lit, ok := literal(word); ok && isFD(lit) {
			return
		}
		c.writePath(word, true) // >&file writes to file
	}
}

// splitBraces returns copies of the words with brace expansions marked, so
// that {cu,}rl does not read as a literal; the tree itself stays as parsed,
// since syntax.Walk does not visit brace expansions.
func splitBraces(words ...*syntax.Word) []*syntax.Word {
	out := make([]*syntax.Word, len(words))
	for i, w := range words {
		cp := &syntax.Word{Parts: slices.Clone(w.Parts)}
		syntax.SplitBraces(cp)
		out[i] = cp
	}
	return out
}

func isFD(s string) bool {
	if s == "-" {
		return true
	}
	s = strings.TrimSuffix(s, "-") // 2>&1- moves the descriptor
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// assign refuses assignments to variables that change what runs, and values
// that are shell code waiting for an eval or an arithmetic context.
func (c *checker) assign(a *syntax.Assign) {
	if a.Name != nil {
		c.checkName(a.Name.Value)
	}
	if a.Value == nil || c.reason != "" {
		return
	}
	if v, ok := literal(a.Value); ok && (strings.Contains(v, "$(") || strings.Contains(v, "`")) {
		c.refuse("assigning shell code to a variable is not allowed (arithmetic or eval could run it): write the command out directly")
	}
}

// decl refuses declare/typeset -n (a name reference can alias PATH) and
// arguments computed at run time (they can expand to any assignment).
func (c *checker) decl(d *syntax.DeclClause) {
	if d.Variant.Value == "nameref" {
		c.refuse("name references are not allowed: assign variables directly")
		return
	}
	for _, a := range d.Args {
		if !a.Naked || a.Name != nil || a.Value == nil {
			continue
		}
		v, ok := literal(a.Value)
		if !ok {
			c.refuse("%s with a variable or substituted argument is not allowed: write the names literally", d.Variant.Value)
			return
		}
		if strings.HasPrefix(v, "-") && strings.Contains(v, "n") {
			c.refuse("name references (%s -n) are not allowed: assign variables directly", d.Variant.Value)
			return
		}
		if !strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "+") {
			c.checkName(v) // declare "PATH=/tmp" assigns too
		}
	}
}

func (c *checker) arithTarget(x syntax.ArithmExpr) {
	if w, ok := x.(*syntax.Word); ok {
		if name, ok := literal(w); ok {
			c.checkName(name)
		}
	}
}

// arithAssignOps are the arithmetic operators that assign to their left side.
var arithAssignOps = []syntax.BinAritOperator{
	syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn,
	syntax.RemAssgn, syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn,
	syntax.ShrAssgn, syntax.AndBoolAssgn, syntax.OrBoolAssgn, syntax.XorBoolAssgn, syntax.PowAssgn,
}

func isArithAssign(op syntax.BinAritOperator) bool {
	for _, a := range arithAssignOps {
		if op == a {
			return true
		}
	}
	return false
}
