package docsearch

import (
	"strings"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Chunk is a piece of one documentation file.
type Chunk struct {
	File    string
	Index   int    // position in its file, from 0
	Heading string // the nearest heading above it ("" before the first)
	Text    string
}

// Split cuts files into chunks of at most maxBytes: a new chunk starts at
// every Markdown heading line ("#" to "######"), and a section longer than
// maxBytes is cut at paragraph breaks, then at lines, then at maxBytes
// itself. Each chunk keeps its section's heading. maxBytes <= 0 means 2000.
func Split(files []messages.ContextFile, maxBytes int) []Chunk {
	if maxBytes <= 0 {
		maxBytes = 2000
	}
	var out []Chunk
	for _, f := range files {
		n := 0
		for _, sec := range sections(f.Text) {
			for _, piece := range pack(sec.text, maxBytes) {
				out = append(out, Chunk{File: f.Path, Index: n, Heading: sec.heading, Text: piece})
				n++
			}
		}
	}
	return out
}

type section struct{ heading, text string }

// sections splits Markdown text at heading lines; a heading line opens its section.
func sections(text string) []section {
	var out []section
	cur := section{}
	var b strings.Builder
	flush := func() {
		if t := strings.TrimSpace(b.String()); t != "" {
			cur.text = t
			out = append(out, cur)
		}
		b.Reset()
	}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if h, ok := heading(line); ok && !fenced {
			flush()
			cur = section{heading: h}
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	flush()
	return out
}

// heading reports a Markdown ATX heading line and its title.
func heading(line string) (string, bool) {
	t := strings.TrimLeft(line, "#")
	level := len(line) - len(t)
	if level < 1 || level > 6 || !strings.HasPrefix(t, " ") {
		return "", false
	}
	return strings.TrimSpace(strings.TrimRight(strings.TrimSpace(t), "#")), true
}

// pack groups the paragraphs of text into pieces of at most max bytes.
func pack(text string, max int) []string {
	var out []string
	cur := ""
	for _, para := range splitLong(strings.Split(text, "\n\n"), max) {
		switch {
		case cur == "":
			cur = para
		case len(cur)+2+len(para) <= max:
			cur += "\n\n" + para
		default:
			out = append(out, cur)
			cur = para
		}
	}
	if strings.TrimSpace(cur) != "" {
		out = append(out, cur)
	}
	return out
}

// splitLong cuts every paragraph longer than max into its lines, and
// lines longer than max at max (on a rune boundary).
func splitLong(paras []string, max int) []string {
	var out []string
	for _, p := range paras {
		switch {
		case strings.TrimSpace(p) == "":
		case len(p) <= max:
			out = append(out, p)
		default:
			for _, line := range strings.Split(p, "\n") {
				if strings.TrimSpace(line) != "" {
					out = append(out, cutLine(line, max)...)
				}
			}
		}
	}
	return out
}

func cutLine(p string, max int) []string {
	var out []string
	for len(p) > max {
		i := max
		for i > 0 && p[i]&0xC0 == 0x80 {
			i--
		}
		if i == 0 {
			i = max
		}
		out = append(out, p[:i])
		p = p[i:]
	}
	return append(out, p)
}
