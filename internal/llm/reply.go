package llm

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Bounds that keep repair cheap on long or hostile replies.
const (
	maxObjectStarts = 16 // '{' positions tried as the start of the reply object
	maxRepairCuts   = 64 // cut points tried when closing a truncated object
)

// parseReply turns an assistant message into the reply object for schema n.
//
// Models wrap JSON in many ways: markdown fences, prose before and after,
// <think> blocks, a reply cut off by max_tokens, or the object nested under
// the schema's name. Rather than guessing which one happened, parseReply
// collects candidate objects (each '{' that opens a balanced object; a
// truncated object closed by closeTruncated; the value under the schema's
// name) and returns the first that validates. Scanning is string-aware, so
// braces and fences inside JSON strings (e.g. code) do not confuse it, and a
// closing fence after the object is just trailing prose.
//
// When no candidate validates, the error (for the corrective message sent
// back to the model) is the first schema error, or else the first syntax error.
func parseReply(content, schemaName string, n *schemaNode) (json.RawMessage, error) {
	s := stripThink(content)
	var schemaErr, syntaxErr error
	cands, truncated := candidates(s)
	for _, cand := range cands {
		obj, err := checkCandidate(cand, schemaName, n)
		switch {
		case err == nil:
			return obj, nil
		case errors.Is(err, errSyntax):
			syntaxErr = cmp.Or(syntaxErr, err)
		default:
			schemaErr = cmp.Or(schemaErr, err)
		}
	}
	// A JSON object with a wrong field says more than braces in prose.
	if err := cmp.Or(schemaErr, syntaxErr); err != nil {
		return nil, err
	}
	switch {
	case truncated:
		return nil, errors.New("the JSON object is cut off")
	case strings.TrimSpace(s) == "":
		return nil, errors.New("the reply is empty")
	}
	return nil, errors.New("the reply contains no JSON object")
}

// errSyntax marks a candidate that is not JSON at all.
var errSyntax = errors.New("invalid JSON")

func checkCandidate(cand, schemaName string, n *schemaNode) (json.RawMessage, error) {
	var v any
	if err := json.Unmarshal([]byte(cand), &v); err != nil {
		return nil, fmt.Errorf("%w: %w", errSyntax, err)
	}
	err := n.validate(v)
	if err != nil {
		// {"plan": {...}}: some models nest the object under the schema name
		// when the schema only arrives in the system message.
		m, ok := v.(map[string]any)
		if inner, nested := m[schemaName]; ok && nested && len(m) == 1 && n.validate(inner) == nil {
			var raw map[string]json.RawMessage // the inner text as the model wrote it
			if json.Unmarshal([]byte(cand), &raw) == nil {
				var buf bytes.Buffer
				if json.Compact(&buf, raw[schemaName]) == nil {
					return buf.Bytes(), nil
				}
			}
		}
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(cand)); err != nil {
		return nil, fmt.Errorf("%w: %w", errSyntax, err)
	}
	return buf.Bytes(), nil
}

// stripThink drops <think>...</think> blocks that reasoning models put before
// the answer; they often contain draft JSON.
func stripThink(s string) string {
	for {
		i := strings.Index(s, "<think>")
		if i < 0 {
			return s
		}
		j := strings.Index(s[i:], "</think>")
		if j < 0 {
			// Unclosed: the answer never came, or the block is the whole reply.
			return s[:i]
		}
		s = s[:i] + s[i+j+len("</think>"):]
	}
}

// candidates returns possible reply objects in s, most plausible first, and
// whether s ends inside an object.
func candidates(s string) (out []string, truncated bool) {
	from := 0
	for range maxObjectStarts {
		i := strings.IndexByte(s[from:], '{')
		if i < 0 {
			break
		}
		start := from + i
		from = start + 1
		end, truncated := matchObject(s, start)
		switch {
		case end > 0:
			out = append(out, s[start:end])
		case truncated:
			if fixed, ok := closeTruncated(s[start:]); ok {
				out = append(out, fixed)
			}
			// Every later '{' is inside this unterminated object; a balanced
			// inner object is not the reply.
			return out, true
		}
	}
	return out, false
}

// matchObject scans from the '{' at s[start] and returns the index just past
// its matching '}'. If s ends first, truncated is true; a mismatched closer
// gives end -1 and truncated false.
func matchObject(s string, start int) (end int, truncated bool) {
	var stack []byte
	inStr, esc := false, false
	for i := start; i < len(s); i++ {
		c := s[i]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			stack = append(stack, c)
		case '}', ']':
			if len(stack) == 0 || !matches(stack[len(stack)-1], c) {
				return -1, false
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return i + 1, false
			}
		}
	}
	return -1, true
}

func matches(open, closer byte) bool {
	return open == '{' && closer == '}' || open == '[' && closer == ']'
}

// closeTruncated repairs an object cut off mid-way (max_tokens): it closes an
// open string and the open arrays and objects. If that is not valid JSON (the
// cut fell inside a key, a number or a literal), it drops the incomplete last
// element by cutting back to an earlier ',' and closing from there. The
// result may lack fields; validation decides whether it is good enough.
//
// Cost is linear in len(s): the open brackets are a persistent linked stack,
// so remembering the stack at a cut point is O(1), and only the last
// maxRepairCuts cut points are kept and tried.
func closeTruncated(s string) (string, bool) {
	type frame struct {
		open   byte
		parent *frame
	}
	type cut struct {
		at    int
		stack *frame
	}
	var (
		top   *frame
		cuts  = make([]cut, 0, maxRepairCuts)
		inStr bool
		esc   bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			top = &frame{open: c, parent: top}
		case '}', ']':
			if top != nil {
				top = top.parent
			}
		case ',':
			if len(cuts) == maxRepairCuts {
				cuts = append(cuts[:0], cuts[1:]...)
			}
			cuts = append(cuts, cut{i, top})
		}
	}
	closers := func(f *frame) string {
		var b strings.Builder
		for ; f != nil; f = f.parent {
			if f.open == '[' {
				b.WriteByte(']')
			} else {
				b.WriteByte('}')
			}
		}
		return b.String()
	}

	// First try: keep everything, when the cut fell between values. A
	// string the cut fell in is never closed: its value is cut short (a
	// test file, a program) and would pass the schema as if it were whole,
	// to fail later at a price. The field is dropped instead (a cut point
	// below), and a required one then asks the model again.
	if fixed := strings.TrimRight(s, " \t\r\n") + closers(top); !inStr && json.Valid([]byte(fixed)) {
		return fixed, true
	}
	for i := len(cuts) - 1; i >= 0; i-- {
		fixed := strings.TrimRight(s[:cuts[i].at], " \t\r\n") + closers(cuts[i].stack)
		if json.Valid([]byte(fixed)) {
			return fixed, true
		}
	}
	return "", false
}
