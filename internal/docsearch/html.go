package docsearch

import (
	"strings"

	"golang.org/x/net/html"
)

// skipped are elements whose text is not documentation.
var skipped = map[string]bool{"script": true, "style": true, "nav": true, "head": true, "noscript": true, "svg": true, "template": true}

// blocks end a line in the text.
var blocks = map[string]bool{"p": true, "div": true, "br": true, "li": true, "tr": true, "pre": true, "section": true,
	"article": true, "table": true, "ul": true, "ol": true, "dt": true, "dd": true, "blockquote": true, "hr": true}

// StripHTML returns an HTML document's text: tags and scripts dropped,
// entities decoded, headings written as Markdown headings ("## Title") so
// Split cuts the text at them as it does Markdown. The document is parsed
// as a browser does (golang.org/x/net/html), so an omitted </head> or a
// self-closing <svg/> ends where the browser ends it, not at the end of
// the document; a heading with no text writes nothing.
func StripHTML(doc string) string {
	root, err := html.Parse(strings.NewReader(doc))
	if err != nil { // only a failing reader, never a strings.Reader
		return ""
	}
	var b strings.Builder
	render(&b, root)
	return tidy(b.String())
}

// render writes n's documentation text.
func render(b *strings.Builder, n *html.Node) {
	switch n.Type {
	case html.TextNode:
		b.WriteString(n.Data)
		return
	case html.CommentNode, html.DoctypeNode:
		return
	case html.ElementNode:
		switch {
		case skipped[n.Data]:
			return
		case headingLevel(n.Data) > 0:
			var t strings.Builder
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				render(&t, c)
			}
			// One line, however the source was laid out (<h2>\n  Title\n</h2>).
			if title := strings.Join(strings.Fields(t.String()), " "); title != "" {
				b.WriteString("\n\n" + strings.Repeat("#", headingLevel(n.Data)) + " " + title + "\n\n")
			}
			return
		case blocks[n.Data]:
			b.WriteString("\n")
			defer b.WriteString("\n")
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		render(b, c)
	}
}

func headingLevel(tag string) int {
	if len(tag) == 2 && tag[0] == 'h' && tag[1] >= '1' && tag[1] <= '6' {
		return int(tag[1] - '0')
	}
	return 0
}

// tidy trims trailing spaces and collapses runs of blank lines.
func tidy(s string) string {
	lines := strings.Split(s, "\n")
	var out []string
	blank := false
	for _, l := range lines {
		l = strings.TrimRight(l, " \t\r")
		if strings.TrimSpace(l) == "" {
			if !blank && len(out) > 0 {
				out = append(out, "")
			}
			blank = true
			continue
		}
		blank = false
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}
