package codemode

import (
	"strconv"

	"go.starlark.net/syntax"
)

// The program is rewritten between parsing and compiling, so that the
// operations memory.go charges pass through a builtin first:
//
//	x + y        ->  __binop("+", x, y)        (also - * % | & ^ <<)
//	x += y       ->  x += __augcheck("+", x, y)
//	x.name       ->  __attr(x, "name")          (reads only; not x.f = v)
//	x[a:b:c]     ->  __built(x[a:b:c])          (x[a:b]: __sliced)
//	{k: v}       ->  __built({k: v})
//
// and, when the last statement is an expression, it becomes
// `__result__ = <expr>` so that its value is the run's result.

const (
	resultName   = "__result__"
	binopName    = "__binop"
	augcheckName = "__augcheck"
	attrName     = "__attr"
	builtName    = "__built"
	slicedName   = "__sliced"
)

var chargedOps = map[syntax.Token]string{
	syntax.PLUS: "+", syntax.MINUS: "-", syntax.STAR: "*", syntax.PERCENT: "%",
	syntax.PIPE: "|", syntax.AMP: "&", syntax.CIRCUMFLEX: "^", syntax.LTLT: "<<",
}

var augOps = map[syntax.Token]string{
	syntax.PLUS_EQ: "+", syntax.MINUS_EQ: "-", syntax.STAR_EQ: "*", syntax.PERCENT_EQ: "%",
	syntax.PIPE_EQ: "|", syntax.AMP_EQ: "&", syntax.CIRCUMFLEX_EQ: "^", syntax.LTLT_EQ: "<<",
}

// rewriteFile rewrites f in place and reports whether the last statement
// was an expression (whose value is bound to __result__).
func rewriteFile(f *syntax.File) bool {
	hasResult := false
	if n := len(f.Stmts); n > 0 {
		if es, ok := f.Stmts[n-1].(*syntax.ExprStmt); ok {
			pos, _ := es.X.Span()
			f.Stmts[n-1] = &syntax.AssignStmt{OpPos: pos, Op: syntax.EQ, LHS: ident(resultName, pos), RHS: es.X}
			hasResult = true
		}
	}
	rewriteStmts(f.Stmts)
	return hasResult
}

func rewriteStmts(stmts []syntax.Stmt) {
	for _, s := range stmts {
		rewriteStmt(s)
	}
}

func rewriteStmt(s syntax.Stmt) {
	switch s := s.(type) {
	case *syntax.AssignStmt:
		rewriteAssign(s)
	case *syntax.DefStmt:
		rewriteParams(s.Params)
		rewriteStmts(s.Body)
	case *syntax.ExprStmt:
		s.X = rewriteExpr(s.X)
	case *syntax.IfStmt:
		s.Cond = rewriteExpr(s.Cond)
		rewriteStmts(s.True)
		rewriteStmts(s.False)
	case *syntax.ForStmt:
		s.X = rewriteExpr(s.X)
		rewriteStmts(s.Body)
	case *syntax.WhileStmt:
		s.Cond = rewriteExpr(s.Cond)
		rewriteStmts(s.Body)
	case *syntax.ReturnStmt:
		if s.Result != nil {
			s.Result = rewriteExpr(s.Result)
		}
	}
}

func rewriteAssign(s *syntax.AssignStmt) {
	if op, ok := augOps[s.Op]; ok {
		if lhsCopy := cloneTarget(s.LHS); lhsCopy != nil {
			s.RHS = call(augcheckName, s.OpPos, str(op), rewriteExpr(lhsCopy), s.RHS)
		}
	}
	s.RHS = rewriteExpr(s.RHS)
	s.LHS = rewriteTarget(s.LHS)
}

// rewriteTarget rewrites the sub-expressions of an assignment target but
// keeps the target's own shape (x, x[i], x.f, tuples of them).
func rewriteTarget(e syntax.Expr) syntax.Expr {
	switch t := e.(type) {
	case *syntax.IndexExpr:
		t.X, t.Y = rewriteExpr(t.X), rewriteExpr(t.Y)
	case *syntax.DotExpr:
		t.X = rewriteExpr(t.X)
	case *syntax.TupleExpr:
		for i := range t.List {
			t.List[i] = rewriteTarget(t.List[i])
		}
	case *syntax.ListExpr:
		for i := range t.List {
			t.List[i] = rewriteTarget(t.List[i])
		}
	case *syntax.ParenExpr:
		t.X = rewriteTarget(t.X)
	}
	return e
}

// cloneTarget copies the target of an augmented assignment, which is read
// once more by __augcheck; nil for shapes it does not copy.
func cloneTarget(e syntax.Expr) syntax.Expr {
	switch t := e.(type) {
	case *syntax.Ident:
		return ident(t.Name, t.NamePos)
	case *syntax.IndexExpr:
		x := cloneTarget(t.X)
		if x == nil {
			return nil
		}
		return &syntax.IndexExpr{X: x, Lbrack: t.Lbrack, Y: cloneExprShallow(t.Y), Rbrack: t.Rbrack}
	case *syntax.DotExpr:
		x := cloneTarget(t.X)
		if x == nil {
			return nil
		}
		return &syntax.DotExpr{X: x, Dot: t.Dot, NamePos: t.NamePos, Name: ident(t.Name.Name, t.Name.NamePos)}
	}
	return nil
}

// cloneExprShallow copies the index of an augmented target when it is a
// name or a literal; other index expressions are shared, which is safe
// because the resolver binds a reused node the same way both times.
func cloneExprShallow(e syntax.Expr) syntax.Expr {
	switch t := e.(type) {
	case *syntax.Ident:
		return ident(t.Name, t.NamePos)
	case *syntax.Literal:
		c := *t
		return &c
	}
	return e
}

func rewriteParams(params []syntax.Expr) {
	for _, p := range params {
		if b, ok := p.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
			b.Y = rewriteExpr(b.Y) // a default value
		}
	}
}

func rewriteExprs(list []syntax.Expr) {
	for i := range list {
		list[i] = rewriteExpr(list[i])
	}
}

func rewriteExpr(e syntax.Expr) syntax.Expr {
	switch x := e.(type) {
	case *syntax.BinaryExpr:
		x.X, x.Y = rewriteExpr(x.X), rewriteExpr(x.Y)
		if op, ok := chargedOps[x.Op]; ok {
			return call(binopName, x.OpPos, str(op), x.X, x.Y)
		}
	case *syntax.DotExpr:
		return call(attrName, x.Dot, rewriteExpr(x.X), str(x.Name.Name))
	case *syntax.CallExpr:
		x.Fn = rewriteExpr(x.Fn)
		rewriteCallArgs(x.Args)
	case *syntax.UnaryExpr:
		if x.X != nil {
			x.X = rewriteExpr(x.X)
		}
	case *syntax.ParenExpr:
		x.X = rewriteExpr(x.X)
	case *syntax.IndexExpr:
		x.X, x.Y = rewriteExpr(x.X), rewriteExpr(x.Y)
	case *syntax.SliceExpr:
		x.X = rewriteExpr(x.X)
		x.Lo, x.Hi, x.Step = rewriteOptional(x.Lo), rewriteOptional(x.Hi), rewriteOptional(x.Step)
		if x.Step == nil {
			return call(slicedName, x.Lbrack, x)
		}
		return call(builtName, x.Lbrack, x)
	case *syntax.CondExpr:
		x.Cond, x.True, x.False = rewriteExpr(x.Cond), rewriteExpr(x.True), rewriteExpr(x.False)
	case *syntax.ListExpr:
		rewriteExprs(x.List)
	case *syntax.TupleExpr:
		rewriteExprs(x.List)
	case *syntax.DictExpr:
		for _, entry := range x.List {
			de := entry.(*syntax.DictEntry)
			de.Key, de.Value = rewriteExpr(de.Key), rewriteExpr(de.Value)
		}
		return call(builtName, x.Lbrace, x)
	case *syntax.DictEntry: // the body of a dict comprehension
		x.Key, x.Value = rewriteExpr(x.Key), rewriteExpr(x.Value)
	case *syntax.Comprehension:
		rewriteComprehension(x)
	case *syntax.LambdaExpr:
		rewriteParams(x.Params)
		x.Body = rewriteExpr(x.Body)
	}
	return e
}

func rewriteOptional(e syntax.Expr) syntax.Expr {
	if e == nil {
		return nil
	}
	return rewriteExpr(e)
}

// rewriteCallArgs leaves the name of a keyword argument alone.
func rewriteCallArgs(args []syntax.Expr) {
	for i, a := range args {
		if b, ok := a.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
			b.Y = rewriteExpr(b.Y)
			continue
		}
		args[i] = rewriteExpr(a)
	}
}

func rewriteComprehension(c *syntax.Comprehension) {
	c.Body = rewriteExpr(c.Body)
	for _, clause := range c.Clauses {
		switch cl := clause.(type) {
		case *syntax.ForClause:
			cl.X = rewriteExpr(cl.X)
		case *syntax.IfClause:
			cl.Cond = rewriteExpr(cl.Cond)
		}
	}
}

func ident(name string, pos syntax.Position) *syntax.Ident {
	return &syntax.Ident{NamePos: pos, Name: name}
}

func str(s string) *syntax.Literal {
	return &syntax.Literal{Token: syntax.STRING, Raw: strconv.Quote(s), Value: s}
}

func call(fn string, pos syntax.Position, args ...syntax.Expr) *syntax.CallExpr {
	return &syntax.CallExpr{Fn: ident(fn, pos), Lparen: pos, Args: args, Rparen: pos}
}
