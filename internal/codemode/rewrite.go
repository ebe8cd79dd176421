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
//	f()[g()] += y ->  __aug0 = f(); __aug1 = g(); __aug0[__aug1] += __augcheck("+", __aug0[__aug1], y)
//	(x) += y     ->  x += __augcheck("+", x, y)
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

// augTempPrefix names the temporaries that hold the parts of an
// augmented assignment's target, evaluated once.
const augTempPrefix = "__aug"

// rewriteFile rewrites f in place and reports whether the last statement
// was an expression (whose value is bound to __result__). Its error is
// an augmented assignment to a target it cannot charge.
func rewriteFile(f *syntax.File) (bool, error) {
	hasResult := false
	if n := len(f.Stmts); n > 0 {
		if es, ok := f.Stmts[n-1].(*syntax.ExprStmt); ok {
			pos, _ := es.X.Span()
			f.Stmts[n-1] = &syntax.AssignStmt{OpPos: pos, Op: syntax.EQ, LHS: ident(resultName, pos), RHS: es.X}
			hasResult = true
		}
	}
	r := &rewriter{}
	f.Stmts = r.stmts(f.Stmts)
	return hasResult, r.err
}

// rewriter numbers the temporaries of augmented assignments and keeps the
// first error.
type rewriter struct {
	temps int
	err   error
}

func (r *rewriter) stmts(stmts []syntax.Stmt) []syntax.Stmt {
	out := stmts[:0:0]
	for _, s := range stmts {
		out = append(out, r.stmt(s)...)
	}
	return out
}

// stmt rewrites s; an augmented assignment may come out as several
// statements (its target's parts into temporaries first).
func (r *rewriter) stmt(s syntax.Stmt) []syntax.Stmt {
	switch s := s.(type) {
	case *syntax.AssignStmt:
		return r.assign(s)
	case *syntax.DefStmt:
		rewriteParams(s.Params)
		s.Body = r.stmts(s.Body)
	case *syntax.ExprStmt:
		s.X = rewriteExpr(s.X)
	case *syntax.IfStmt:
		s.Cond = rewriteExpr(s.Cond)
		s.True = r.stmts(s.True)
		s.False = r.stmts(s.False)
	case *syntax.ForStmt:
		s.X = rewriteExpr(s.X)
		s.Body = r.stmts(s.Body)
	case *syntax.WhileStmt:
		s.Cond = rewriteExpr(s.Cond)
		s.Body = r.stmts(s.Body)
	case *syntax.ReturnStmt:
		if s.Result != nil {
			s.Result = rewriteExpr(s.Result)
		}
	}
	return []syntax.Stmt{s}
}

func (r *rewriter) assign(s *syntax.AssignStmt) []syntax.Stmt {
	var pre []syntax.Stmt
	if op, ok := augOps[s.Op]; ok {
		s.LHS = unparen(s.LHS)
		var lhsCopy syntax.Expr
		pre, lhsCopy = r.augTarget(s.LHS)
		if lhsCopy == nil {
			if r.err == nil {
				r.err = syntax.Error{Pos: s.OpPos, Msg: "this target of an augmented assignment is not supported; write x = x " + op + " y"}
			}
			return []syntax.Stmt{s}
		}
		s.RHS = call(augcheckName, s.OpPos, str(op), rewriteExpr(lhsCopy), s.RHS)
	}
	s.RHS = rewriteExpr(s.RHS)
	s.LHS = rewriteTarget(s.LHS)
	return append(pre, s)
}

// augTarget makes the target of an augmented assignment readable twice
// (by __augcheck, then by the assignment) with each of its parts
// evaluated once: a container or an index that is not a name or a literal
// is assigned to a temporary first (pre). It returns the target's copy;
// nil for a shape it does not handle.
func (r *rewriter) augTarget(e syntax.Expr) (pre []syntax.Stmt, cp syntax.Expr) {
	switch t := e.(type) {
	case *syntax.Ident:
		return nil, ident(t.Name, t.NamePos)
	case *syntax.IndexExpr:
		pre = append(pre, r.hoist(&t.X)...)
		if _, lit := unparen(t.Y).(*syntax.Literal); !lit {
			pre = append(pre, r.hoist(&t.Y)...)
		}
		return pre, &syntax.IndexExpr{X: cloneExprShallow(t.X), Lbrack: t.Lbrack, Y: cloneExprShallow(unparen(t.Y)), Rbrack: t.Rbrack}
	case *syntax.DotExpr:
		pre = r.hoist(&t.X)
		return pre, &syntax.DotExpr{X: cloneExprShallow(t.X), Dot: t.Dot, NamePos: t.NamePos, Name: ident(t.Name.Name, t.Name.NamePos)}
	}
	return nil, nil
}

// hoist assigns *e to a new temporary, unless it is a name, and puts the
// temporary's name in its place.
func (r *rewriter) hoist(e *syntax.Expr) []syntax.Stmt {
	x := unparen(*e)
	if id, ok := x.(*syntax.Ident); ok {
		*e = id
		return nil
	}
	pos, _ := x.Span()
	name := augTempPrefix + strconv.Itoa(r.temps)
	r.temps++
	*e = ident(name, pos)
	return []syntax.Stmt{&syntax.AssignStmt{OpPos: pos, Op: syntax.EQ, LHS: ident(name, pos), RHS: rewriteExpr(x)}}
}

func unparen(e syntax.Expr) syntax.Expr {
	for {
		p, ok := e.(*syntax.ParenExpr)
		if !ok {
			return e
		}
		e = p.X
	}
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

// cloneExprShallow copies a part of an augmented target, a name or a
// literal (augTarget hoists the others).
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
