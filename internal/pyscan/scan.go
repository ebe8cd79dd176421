package pyscan

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// stmt is one logical line of Python source with comments removed, line
// continuations joined and every string literal replaced by a placeholder
// "\x00<index>\x00" into strs.
type stmt struct {
	text string
	strs []string
}

// scan splits src into logical lines and classifies every physical line
// (those of strings.Split(src, "\n")). It is a tokenizer in miniature: it
// knows brackets, string literals with their prefixes and triple quotes,
// comments, backslash continuations and ';'. It never fails: unterminated
// strings or brackets run to the end of the input.
func scan(src string) ([]stmt, []LineKind) {
	lx := &lexer{src: src, nlines: strings.Count(src, "\n") + 1}
	lx.cont = make([]bool, lx.nlines)
	for lx.i < len(src) {
		lx.step()
	}
	lx.emit()
	return lx.stmts, lineKinds(src, lx.cont)
}

// lexer is scan's state while it walks src.
type lexer struct {
	src    string
	i      int // the next byte to read
	nlines int
	cont   []bool // per physical line: it continues an earlier logical line
	line   int    // the current physical line
	depth  int    // open brackets
	cur    strings.Builder
	strs   []string // the current logical line's string literals
	stmts  []stmt
}

// emit ends the current logical line.
func (lx *lexer) emit() {
	if t := strings.TrimSpace(lx.cur.String()); t != "" {
		lx.stmts = append(lx.stmts, stmt{text: t, strs: lx.strs})
	}
	lx.cur.Reset()
	lx.strs = nil
}

// newline moves to the next physical line, which continued says
// continues the current logical line.
func (lx *lexer) newline(continued bool) {
	lx.line++
	if lx.line < lx.nlines {
		lx.cont[lx.line] = continued
	}
}

// step reads one token at src[i]: a comment, a line break (escaped or
// not), a bracket, a ';', a string literal, an identifier, or one byte.
func (lx *lexer) step() {
	src, i := lx.src, lx.i
	c := src[i]
	switch {
	case c == '#':
		for i < len(src) && src[i] != '\n' {
			i++
		}
		lx.i = i
	case c == '\\' && strings.HasPrefix(src[i+1:], "\n"):
		lx.i += 2
		lx.newline(true)
		lx.cur.WriteByte(' ')
	case c == '\\' && strings.HasPrefix(src[i+1:], "\r\n"):
		lx.i += 3
		lx.newline(true)
		lx.cur.WriteByte(' ')
	case c == '\n':
		lx.i++
		lx.lineBreak()
	case c == '\r' || c == '\t':
		lx.i++
		lx.cur.WriteByte(' ')
	case c == ';' && lx.depth == 0:
		lx.i++
		lx.emit()
	case strings.IndexByte("([{)]}", c) >= 0:
		lx.bracket(c)
	case c == '"' || c == '\'':
		lx.stringLiteral(i)
	case isIdentByte(c) && !isDigit(c):
		lx.identifier()
	default:
		lx.cur.WriteByte(c)
		lx.i++
	}
}

// bracket copies a bracket and counts it open or closed; a stray closing
// one does not count.
func (lx *lexer) bracket(c byte) {
	switch c {
	case '(', '[', '{':
		lx.depth++
	default:
		if lx.depth > 0 {
			lx.depth--
		}
	}
	lx.i++
	lx.cur.WriteByte(c)
}

// lineBreak ends the logical line, unless brackets are open.
func (lx *lexer) lineBreak() {
	if lx.depth > 0 {
		lx.newline(true)
		lx.cur.WriteByte(' ')
		return
	}
	lx.emit()
	lx.newline(false)
}

// stringLiteral reads the literal whose opening quote is at src[q] and
// writes its placeholder.
func (lx *lexer) stringLiteral(q int) {
	var lit string
	lit, lx.i = scanString(lx.src, q, lx.newline)
	lx.cur.WriteString("\x00" + strconv.Itoa(len(lx.strs)) + "\x00")
	lx.strs = append(lx.strs, lit)
}

// identifier copies an identifier, or reads a literal when it is a string
// prefix (r, b, f, u, rb, ...) directly before a quote.
func (lx *lexer) identifier() {
	src, i := lx.src, lx.i
	j := i
	for j < len(src) && isIdentByte(src[j]) {
		j++
	}
	if j < len(src) && (src[j] == '"' || src[j] == '\'') && isStringPrefix(src[i:j]) {
		lx.stringLiteral(j)
		return
	}
	lx.cur.WriteString(src[i:j])
	lx.i = j
}

// lineKinds classifies the physical lines of src; cont marks those that
// continue a logical line.
func lineKinds(src string, cont []bool) []LineKind {
	lines := strings.Split(src, "\n")
	kinds := make([]LineKind, len(lines))
	for n, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case cont[n]:
			kinds[n] = Continuation
		case t == "" || t[0] == '#':
			kinds[n] = Blank
		default:
			kinds[n] = Statement
		}
	}
	return kinds
}

// scanString reads the string literal whose opening quote is at src[i] and
// returns its contents and the index just past it. newline is called for
// every line break inside the literal.
func scanString(src string, i int, newline func(bool)) (string, int) {
	q := src[i]
	triple := strings.HasPrefix(src[i:], strings.Repeat(string(q), 3))
	start := i + 1
	if triple {
		start = i + 3
	}
	for j := start; j < len(src); j++ {
		switch c := src[j]; {
		case c == '\\':
			// Skips the escaped character in raw strings too: r"\"" is one literal.
			if j+1 < len(src) {
				if src[j+1] == '\n' {
					newline(true)
				}
				j++
			}
		case c == '\n':
			if !triple {
				// Unterminated single-quoted literal: end it here so the
				// next line is scanned normally.
				return src[start:j], j
			}
			newline(true)
		case c == q:
			if !triple {
				return src[start:j], j + 1
			}
			if strings.HasPrefix(src[j:], strings.Repeat(string(q), 3)) {
				return src[start:j], j + 3
			}
		}
	}
	return src[start:], len(src)
}

func isStringPrefix(s string) bool {
	switch strings.ToLower(s) {
	case "r", "u", "b", "f", "br", "rb", "fr", "rf":
		return true
	}
	return false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isIdentByte accepts every non-ASCII byte so that Unicode identifiers stay whole.
func isIdentByte(c byte) bool {
	return c == '_' || isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'z') || c >= 0x80
}

// compoundKeywords start statements that may carry a body after a colon on
// the same line ("try: import x").
var compoundKeywords = map[string]bool{
	"if": true, "elif": true, "else": true, "try": true, "except": true, "finally": true,
	"with": true, "for": true, "while": true, "def": true, "class": true, "async": true,
}

var (
	dynamicImportRe = regexp.MustCompile(`(?:\b__import__|\bimport_module|\bimportorskip)\s*\(\s*\x00(\d+)\x00`)
	moduleNameRe    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)
)

// Modules returns the absolute module paths that src imports, sorted and
// without duplicates: "a.b" and "d" for `import a.b as c, d`, "x.y" for
// `from x.y import z`, and the literal argument of __import__("m"),
// importlib.import_module("m") and pytest.importorskip("m"). Relative
// imports are ignored, as are imports inside comments and string literals.
//
// Use Modules rather than Imports when mapping to distributions: namespace
// packages such as google.protobuf are only recognisable by their full path.
func Modules(src string) []string {
	stmts, _ := scan(src)
	seen := map[string]bool{}
	for _, s := range stmts {
		for _, m := range stmtModules(s) {
			seen[m] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// Imports returns the top-level module names that src imports, sorted and
// without duplicates: "a" and "d" for `import a.b as c, d`, "x" for
// `from x.y import z`. See Modules for what counts as an import.
func Imports(src string) []string {
	seen := map[string]bool{}
	for _, m := range Modules(src) {
		seen[topLevel(m)] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

func stmtModules(s stmt) []string {
	var mods []string
	for _, m := range dynamicImportRe.FindAllStringSubmatch(s.text, -1) {
		n, _ := strconv.Atoi(m[1])
		if n < len(s.strs) && moduleNameRe.MatchString(s.strs[n]) {
			mods = append(mods, s.strs[n])
		}
	}
	return append(mods, statementImports(s.text)...)
}

// statementImports parses one cleaned logical line, descending into the body
// of one-line compound statements ("try: import x"). It walks the tokens once,
// so deeply nested one-liners stay linear.
func statementImports(text string) []string {
	toks := tokens(text)
	for len(toks) > 0 {
		switch {
		case toks[0] == "import":
			return parseImport(toks[1:])
		case toks[0] == "from":
			return parseFrom(toks[1:])
		case compoundKeywords[toks[0]]:
			i := bodyColon(toks)
			if i < 0 {
				return nil
			}
			toks = toks[i+1:]
		default:
			return nil
		}
	}
	return nil
}

// bodyColon returns the index of the first ':' outside brackets that is not
// part of ":=", or -1.
func bodyColon(toks []string) int {
	depth := 0
	for i, t := range toks {
		switch t {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
		case ":":
			if depth == 0 && (i+1 == len(toks) || toks[i+1] != "=") {
				return i
			}
		}
	}
	return -1
}

// tokens splits a cleaned logical line into identifiers and single
// punctuation characters; string placeholders and whitespace are dropped.
func tokens(text string) []string {
	var toks []string
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == '\x00':
			j := strings.IndexByte(text[i+1:], '\x00')
			if j < 0 {
				return toks
			}
			toks = append(toks, "\x00")
			i += j + 2
		case c == ' ':
			i++
		case isIdentByte(c):
			j := i
			for j < len(text) && isIdentByte(text[j]) {
				j++
			}
			toks = append(toks, text[i:j])
			i = j
		default:
			toks = append(toks, text[i:i+1])
			i++
		}
	}
	return toks
}

// parseImport parses the tail of `import a.b as c, d`.
func parseImport(toks []string) []string {
	var mods []string
	var cur []string
	inAlias := false
	flush := func() {
		if len(cur) > 0 {
			mods = append(mods, strings.Join(cur, "."))
		}
		cur, inAlias = nil, false
	}
	for _, t := range toks {
		switch {
		case t == ",":
			flush()
		case t == "as":
			inAlias = true
		case t == "." || t == "(" || t == ")" || inAlias:
		case isName(t):
			cur = append(cur, t)
		default:
			return mods // not an import statement after all
		}
	}
	flush()
	return mods
}

// parseFrom parses the tail of `from x.y import z`; relative imports give nothing.
func parseFrom(toks []string) []string {
	var parts []string
	for i, t := range toks {
		switch {
		case t == ".":
			if i == 0 {
				return nil
			}
		case t == "import":
			if len(parts) == 0 {
				return nil
			}
			return []string{strings.Join(parts, ".")}
		case isName(t):
			parts = append(parts, t)
		default:
			return nil
		}
	}
	return nil
}

func isName(t string) bool {
	return t != "" && isIdentByte(t[0]) && !isDigit(t[0])
}

func topLevel(m string) string {
	if i := strings.IndexByte(m, '.'); i >= 0 {
		return m[:i]
	}
	return m
}
