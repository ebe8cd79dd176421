package trim

import (
	"fmt"
	"unicode/utf8"
)

// Middle returns s cut to at most budget bytes (plus a short marker), keeping
// its head and tail: a pytest run puts the first failure at the top and the
// summary at the bottom. Cuts fall on UTF-8 boundaries. A budget of 0 or
// less keeps everything.
func Middle(s string, budget int) string {
	if budget <= 0 || len(s) <= budget {
		return s
	}
	head := budget / 2
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	tail := len(s) - (budget - head)
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + fmt.Sprintf("\n... [%d bytes trimmed] ...\n", tail-head) + s[tail:]
}
