package messages

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text in messages (names and strings from a job file, a result, an
// event) is chosen by whoever wrote them, and a terminal obeys escape
// sequences: "\x1b]0;title\x07" retitles the window, "\x1b[2J" clears the
// screen. Whatever prints such text for a person passes it through
// Printable, or QuoteName for a name.

// Printable returns s with every control character other than \n and \t
// (C0, DEL, C1), every bidirectional-text control and every byte that is
// not UTF-8 written as a Go escape (\x1b, \u009b, \u202e), so that s shows
// on a terminal as the text it is.
func Printable(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r):
			q := strconv.QuoteRuneToASCII(r) // '\x1b', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// QuoteName returns a name as it is when every character of it prints,
// and quoted (strconv.Quote) when not: "outputs.total", but
// "outputs.\"\\x1b[31m\"".
func QuoteName(s string) string {
	if !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

func needsEscape(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if unsafeRune(r) {
			return true
		}
	}
	return false
}

func unsafeRune(r rune) bool {
	if r == '\n' || r == '\t' {
		return false
	}
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}
