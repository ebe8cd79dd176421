package pyscan

// LineKind classifies a physical line of Python source.
type LineKind uint8

const (
	// Blank is an empty or comment-only line outside any bracket or string.
	Blank LineKind = iota
	// Statement starts a logical line: its indentation is meaningful.
	Statement
	// Continuation continues the logical line above it: inside brackets, a
	// multi-line string, or after a backslash.
	Continuation
)

func (k LineKind) String() string {
	switch k {
	case Blank:
		return "blank"
	case Statement:
		return "statement"
	case Continuation:
		return "continuation"
	}
	return "unknown"
}

// LineKinds classifies every line of strings.Split(src, "\n"), so that a
// caller can find where definitions begin and end without a Python parser
// (a "def" inside a docstring is a Continuation, not a Statement).
func LineKinds(src string) []LineKind {
	_, kinds := scan(src)
	return kinds
}
