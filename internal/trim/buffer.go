package trim

import (
	"fmt"
	"strings"
)

// Buffer is an io.Writer that keeps at most Limit bytes of what is
// written to it: the first part and the last part, with a marker saying how
// much was cut in between. A runaway print loop then costs a fixed amount of
// memory, and both the start of the output and the final traceback survive.
// Backends use it for stdout and stderr. It is not safe for concurrent use.
type Buffer struct {
	limit int
	head  []byte
	tail  []byte // ring buffer of the last bytes once head is full
	next  int    // write position in tail once it is full
	total int64
}

// NewBuffer returns a buffer that keeps at most limit bytes (at
// least 64, so the marker fits). A third of the limit is kept from the start.
func NewBuffer(limit int) *Buffer {
	limit = max(limit, 64)
	return &Buffer{limit: limit, head: make([]byte, 0, min(limit/3, 4096))}
}

// Write keeps the head and tail of p. It never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	n := len(p)
	b.total += int64(n)
	headCap := b.limit / 3
	if room := headCap - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	tailCap := b.limit - headCap
	if len(p) >= tailCap { // only the end of p can survive
		b.tail = append(b.tail[:0], p[len(p)-tailCap:]...)
		b.next = 0
		return n, nil
	}
	for len(p) > 0 {
		if len(b.tail) < tailCap {
			k := min(tailCap-len(b.tail), len(p))
			b.tail = append(b.tail, p[:k]...)
			p = p[k:]
			continue
		}
		k := copy(b.tail[b.next:], p)
		b.next = (b.next + k) % tailCap
		p = p[k:]
	}
	return n, nil
}

// Truncated reports whether anything was cut.
func (b *Buffer) Truncated() bool { return b.total > int64(b.limit) }

// Len is the number of bytes written, including the ones that were cut.
func (b *Buffer) Len() int64 { return b.total }

// Bytes returns what was kept: everything when nothing was cut, else the
// head, a marker and the tail, at most the limit in total.
func (b *Buffer) Bytes() []byte {
	tail := make([]byte, 0, len(b.tail))
	tail = append(tail, b.tail[b.next:]...)
	tail = append(tail, b.tail[:b.next]...)
	if !b.Truncated() {
		return append(append([]byte{}, b.head...), tail...)
	}
	// Size the marker for the largest count it can show, so the result
	// never exceeds the limit.
	width := len(fmt.Sprint(b.total))
	keep := max(b.limit-len(b.head)-len(markerFor(0))+1-width, 0)
	keep = min(keep, len(tail))
	marker := markerFor(b.total - int64(len(b.head)) - int64(keep))
	out := make([]byte, 0, b.limit)
	out = append(out, b.head...)
	out = append(out, marker...)
	return append(out, tail[len(tail)-keep:]...)
}

func markerFor(omitted int64) string {
	return fmt.Sprintf("\n... [%d bytes omitted] ...\n", omitted)
}

// HeadTail shortens s to at most limit bytes, keeping the head and the
// tail around a marker, on UTF-8 boundaries.
func HeadTail(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	b := NewBuffer(limit)
	b.Write([]byte(s))
	return toValidUTF8(b.Bytes())
}

// Tail keeps the last limit bytes of s (a traceback ends with the
// error), marking the cut.
func Tail(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	const marker = "... [trimmed] ...\n"
	keep := max(limit-len(marker), 0)
	return marker + toValidUTF8([]byte(s[len(s)-keep:]))
}

// Head keeps the first limit bytes of s, marking the cut.
func Head(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	const marker = " ... [trimmed]"
	keep := max(limit-len(marker), 0)
	return toValidUTF8([]byte(s[:keep])) + marker
}

// toValidUTF8 drops the partial runes a byte-level cut leaves behind (and any
// other invalid bytes), so the result is safe in JSON.
func toValidUTF8(b []byte) string { return strings.ToValidUTF8(string(b), "") }
