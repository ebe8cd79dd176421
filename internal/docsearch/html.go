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
// Split cuts the text at them as it does Markdown.
func StripHTML(doc string) string {
	z := html.NewTokenizer(strings.NewReader(doc))
	var b strings.Builder
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return tidy(b.String())
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			tag := string(name)
			switch {
			case skipped[tag]:
				skip++
			case headingLevel(tag) > 0:
				b.WriteString("\n\n" + strings.Repeat("#", headingLevel(tag)) + " ")
			case blocks[tag]:
				b.WriteString("\n")
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			tag := string(name)
			switch {
			case skipped[tag] && skip > 0:
				skip--
			case headingLevel(tag) > 0:
				b.WriteString("\n\n")
			case blocks[tag]:
				b.WriteString("\n")
			}
		}
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
