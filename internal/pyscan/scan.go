package pyscan

import (
	"regexp"
	"sort"
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
	nlines := strings.Count(src, "\n") + 1
	cont := make([]bool, nlines) // the line continues an earlier logical line
	var (
		stmts []stmt
		cur   strings.Builder
		strs  []string
		depth int
		line  int
	)
	emit := func() {
		if t := strings.TrimSpace(cur.String()); t != "" {
			stmts = append(stmts, stmt{text: t, strs: strs})
		}
		cur.Reset()
		strs = nil
	}
	newline := func(continued bool) {
		line++
		if line < nlines {
			cont[line] = continued
		}
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '\\' && strings.HasPrefix(src[i+1:], "\n"):
			i += 2
			newline(true)
			cur.WriteByte(' ')
		case c == '\\' && strings.HasPrefix(src[i+1:], "\r\n"):
			i += 3
			newline(true)
			cur.WriteByte(' ')
		case c == '\n':
			i++
			if depth > 0 {
				newline(true)
				cur.WriteByte(' ')
			} else {
				emit()
				newline(false)
			}
		case c == '\r' || c == '\t':
			i++
			cur.WriteByte(' ')
		case c == ';' && depth == 0:
			i++
			emit()
		case c == '(' || c == '[' || c == '{':
			depth++
			i++
			cur.WriteByte(c)
		case c == ')' || c == ']' || c == '}':
			if depth > 0 {
				depth--
			}
			i++
			cur.WriteByte(c)
		case c == '"' || c == '\'':
			var lit string
			lit, i = scanString(src, i, newline)
			cur.WriteString("\x00" + strconv.Itoa(len(strs)) + "\x00")
			strs = append(strs, lit)
		case isIdentByte(c) && !isDigit(c):
			j := i
			for j < len(src) && isIdentByte(src[j]) {
				j++
			}
			// A string prefix (r, b, f, u, rb, ...) directly before a quote
			// starts a literal; any other identifier is copied as is.
			if j < len(src) && (src[j] == '"' || src[j] == '\'') && isStringPrefix(src[i:j]) {
				var lit string
				lit, i = scanString(src, j, newline)
				cur.WriteString("\x00" + strconv.Itoa(len(strs)) + "\x00")
				strs = append(strs, lit)
				continue
			}
			cur.WriteString(src[i:j])
			i = j
		default:
			cur.WriteByte(c)
			i++
		}
	}
	emit()

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
	return stmts, kinds
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
	return sortedSet(seen)
}

// Imports returns the top-level module names that src imports, sorted and
// without duplicates: "a" and "d" for `import a.b as c, d`, "x" for
// `from x.y import z`. See Modules for what counts as an import.
func Imports(src string) []string {
	seen := map[string]bool{}
	for _, m := range Modules(src) {
		seen[topLevel(m)] = true
	}
	return sortedSet(seen)
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

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
