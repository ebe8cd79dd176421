package readme

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

var (
	// inlineLinkRe finds [text](target) and ![alt](target); the target may
	// be followed by a "title".
	inlineLinkRe = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refLinkRe finds reference definitions: [label]: target
	refLinkRe = regexp.MustCompile(`(?m)^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$`)
	codeSpan  = regexp.MustCompile("`[^`\n]*`")
	headingRe = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
)

// TestLinks: every relative link in the repository's Markdown files names
// a file or directory that exists, and every #anchor a heading of the file
// it points into, as GitHub renders them.
func TestLinks(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	anchors := map[string]map[string]bool{} // by file, relative to root
	var docs []string
	for _, f := range checkoutFiles(t) {
		if strings.HasSuffix(f, ".md") {
			docs = append(docs, f)
		}
	}
	if len(docs) < 5 {
		t.Fatalf("found %d Markdown files: the listing is broken", len(docs))
	}
	for _, doc := range docs {
		text, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range linkTargets(string(text)) {
			if err := checkLink(root, doc, target, anchors); err != nil {
				t.Errorf("%s: link %s: %v", doc, target, err)
			}
		}
	}
}

// linkTargets are the targets of the links of a Markdown text, leaving out
// fenced code blocks and code spans, which only show link syntax.
func linkTargets(text string) []string {
	var prose strings.Builder
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if !inFence {
			prose.WriteString(codeSpan.ReplaceAllString(line, "") + "\n")
		}
	}
	var out []string
	for _, re := range []*regexp.Regexp{inlineLinkRe, refLinkRe} {
		for _, m := range re.FindAllStringSubmatch(prose.String(), -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// checkLink checks one link target of doc: external links are not
// fetched; a relative path must exist; an anchor must be a heading's.
func checkLink(root, doc, target string, anchors map[string]map[string]bool) error {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return nil
	}
	path, anchor, _ := strings.Cut(target, "#")
	file := doc
	if path != "" {
		file = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(doc), path)))
		if strings.HasPrefix(file, "../") {
			return fmt.Errorf("leads out of the repository")
		}
		if _, err := os.Stat(filepath.Join(root, file)); err != nil {
			return fmt.Errorf("no such file or directory: %s", file)
		}
	}
	if anchor == "" {
		return nil
	}
	if !strings.HasSuffix(file, ".md") {
		return fmt.Errorf("an anchor into %s, which is not Markdown", file)
	}
	if anchors[file] == nil {
		text, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			return err
		}
		anchors[file] = headingAnchors(string(text))
	}
	if !anchors[file][anchor] {
		return fmt.Errorf("%s has no heading with the anchor #%s", file, anchor)
	}
	return nil
}

// headingAnchors are the anchors GitHub gives a Markdown text's headings:
// lower case, punctuation dropped, spaces made hyphens, and -1, -2, ...
// after a repeated one.
func headingAnchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		m := headingRe.FindStringSubmatch(line)
		if inFence || m == nil {
			continue
		}
		slug := slugify(m[2])
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

// slugify is GitHub's heading anchor: the text of the heading (links and
// code marks reduced to their text), lower case, letters, digits, spaces,
// hyphens and underscores kept, spaces made hyphens.
func slugify(heading string) string {
	heading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestSlugify pins the anchors the documentation links to.
func TestSlugify(t *testing.T) {
	t.Parallel()
	for heading, want := range map[string]string{
		"A newcomer's map":                   "a-newcomers-map",
		"Builds: what they can reach":        "builds-what-they-can-reach",
		"Contract 6: configuration":          "contract-6-configuration",
		"The parts as separate processes":    "the-parts-as-separate-processes",
		"Configuration ([Contract 6](x.md))": "configuration-contract-6",
		"`AUTOCODER_NATS_URL` and TLS":       "autocoder_nats_url-and-tls",
	} {
		if got := slugify(heading); got != want {
			t.Errorf("slugify(%q) = %q, want %q", heading, got, want)
		}
	}
}
