package docsearch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/pkg/messages"
)

func TestTokens(t *testing.T) {
	t.Parallel()
	got := Tokens("How do I open a Frame with read_frame() and lib.open? The CRC-32 is 4 bytes.")
	if plural := Tokens("records status class bus"); !cmp.Equal(plural, []string{"record", "status", "class", "bus"}) {
		t.Errorf("plural folding: %v", plural)
	}
	want := []string{"open", "frame", "read_frame", "read", "frame", "lib.open", "lib", "open", "crc-32", "crc", "32", "byte"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Tokens (-want +got):\n%s", diff)
	}
}

func TestSplitAtHeadingsAndParagraphs(t *testing.T) {
	t.Parallel()
	text := "Intro line.\n\n# Header\n\nThe header is 16 bytes.\n\n## Records\n\n" +
		strings.Repeat("alpha ", 30) + "\n\n" + strings.Repeat("beta ", 30) + "\n\n```\n# not a heading inside a fence\n```\n"
	got := Split([]messages.ContextFile{{Path: "spec.md", Text: text}}, 200)
	var heads []string
	for i, c := range got {
		if c.Index != i || c.File != "spec.md" {
			t.Errorf("chunk %d: file %q index %d", i, c.File, c.Index)
		}
		if len(c.Text) > 200 {
			t.Errorf("chunk %d is %d bytes, over 200", i, len(c.Text))
		}
		heads = append(heads, c.Heading)
	}
	want := []string{"", "Header", "Records", "Records"} // the Records section is cut in two
	if diff := cmp.Diff(want, heads); diff != "" {
		t.Errorf("headings (-want +got):\n%s", diff)
	}
	if last := got[len(got)-1].Text; !strings.Contains(last, "# not a heading inside a fence") {
		t.Errorf("a fenced '#' line started a section: last chunk %q", last)
	}
}

func TestSplitCutsOneLongLine(t *testing.T) {
	t.Parallel()
	line := strings.Repeat("é", 500) // 1000 bytes, no break anywhere
	got := Split([]messages.ContextFile{{Path: "a.txt", Text: line}}, 99)
	var joined strings.Builder
	for _, c := range got {
		if len(c.Text) > 99 {
			t.Fatalf("chunk of %d bytes, over 99", len(c.Text))
		}
		joined.WriteString(c.Text)
	}
	if joined.String() != line {
		t.Errorf("the pieces do not add up to the line")
	}
}

// chunks is a small corpus: one chunk on each topic.
var chunks = []Chunk{
	{File: "a.md", Index: 0, Heading: "Installing", Text: "Install the library with the installer and set the PATH."},
	{File: "a.md", Index: 1, Heading: "Checksums", Text: "Every frame ends with a CRC-32 checksum over the payload. Call verify_crc(frame) before reading."},
	{File: "b.md", Index: 0, Heading: "Colours", Text: "The palette has sixteen colours; colour 0 is transparent."},
	{File: "b.md", Index: 1, Heading: "Frames", Text: "A frame holds a payload. Frames are read with read_frame(stream)."},
}

func TestSearchRanksByBM25(t *testing.T) {
	t.Parallel()
	hits := NewIndex(chunks).Search("verify the CRC checksum of a frame")
	if len(hits) < 2 {
		t.Fatalf("got %d hits, want at least 2", len(hits))
	}
	if hits[0].File != "a.md" || hits[0].Index != 1 {
		t.Errorf("best hit = %s#%d, want a.md#1 (the checksum chunk)", hits[0].File, hits[0].Index)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Score > hits[i-1].Score {
			t.Errorf("hits not in score order: %v", hits)
		}
	}
	for _, h := range hits {
		if h.Heading == "Colours" || h.Heading == "Installing" {
			t.Errorf("a chunk sharing no term with the query was returned: %+v", h)
		}
	}
}

func TestSearchRareTermsWeighMore(t *testing.T) {
	t.Parallel()
	// "frame" is in three chunks, "palette" in one: the rare term wins.
	hits := NewIndex(chunks).Search("frame palette")
	if len(hits) == 0 || hits[0].Heading != "Colours" {
		t.Errorf("best hit = %+v, want the Colours chunk", hits)
	}
}

func TestSelectAllWhenItFits(t *testing.T) {
	t.Parallel()
	sel := Select(chunks, "anything", 1<<20)
	if sel.Retrieved || len(sel.Hits) != len(chunks) {
		t.Fatalf("Select with room for all = %d hits, retrieved %v; want all %d, not retrieved", len(sel.Hits), sel.Retrieved, len(chunks))
	}
	for i, h := range sel.Hits {
		if h.Chunk != chunks[i] || h.Score != 0 {
			t.Errorf("hit %d = %+v, want chunk %d in order with score 0", i, h, i)
		}
	}
}

func TestSelectRetrievesWithinBudget(t *testing.T) {
	t.Parallel()
	budget := Size(chunks[1]) + Size(chunks[3])
	sel := Select(chunks, "read a frame and verify its CRC checksum", budget)
	if !sel.Retrieved {
		t.Fatal("Select over budget did not retrieve")
	}
	var got []string
	used := 0
	for _, h := range sel.Hits {
		got = append(got, h.Heading)
		used += Size(h.Chunk)
	}
	if diff := cmp.Diff([]string{"Checksums", "Frames"}, got); diff != "" {
		t.Errorf("retrieved (-want +got):\n%s", diff)
	}
	if used > budget {
		t.Errorf("retrieved %d bytes, over the budget of %d", used, budget)
	}
}

func TestStripHTML(t *testing.T) {
	t.Parallel()
	doc := `<!doctype html><html><head><title>T</title><style>p{color:red}</style></head>
<body><nav>Home | About</nav><h1>Frame format</h1><p>A frame is <b>16&nbsp;bytes</b> &amp; more.</p>
<script>alert("x")</script><h2>Fields</h2><ul><li>magic</li><li>length</li></ul></body></html>`
	got := StripHTML(doc)
	want := "# Frame format\n\nA frame is 16\u00a0bytes & more.\n\n## Fields\n\nmagic\n\nlength"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("StripHTML (-want +got):\n%s", diff)
	}
}

func TestLoadFolder(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "docs")
	write(t, filepath.Join(dir, "b.md"), "# B\n\nbee")
	write(t, filepath.Join(dir, "a.html"), "<h1>A</h1><p>ay</p>")
	write(t, filepath.Join(dir, "sub", "c.txt"), "see")
	write(t, filepath.Join(dir, "logo.png"), "\x89PNG")
	write(t, filepath.Join(dir, ".hidden", "d.md"), "hidden")
	b, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	want := []messages.ContextFile{{Path: "docs/a.html", Text: "# A\n\nay"}, {Path: "docs/b.md", Text: "# B\n\nbee"}, {Path: "docs/sub/c.txt", Text: "see"}}
	if diff := cmp.Diff(want, b.Files); diff != "" {
		t.Errorf("Load (-want +got):\n%s", diff)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	png := filepath.Join(dir, "logo.png")
	write(t, png, "x")
	bin := filepath.Join(dir, "bin.md")
	write(t, bin, "\xff\xfe")
	big := filepath.Join(dir, "big.txt")
	write(t, big, strings.Repeat("x", messages.MaxContextFile+1))
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
		is               error
	}{
		{"missing", filepath.Join(dir, "nope.md"), "no such file", nil},
		{"not docs", png, "want .md", ErrNotDocs},
		{"not utf-8", bin, "not UTF-8", ErrNotDocs},
		{"too large", big, "larger than 2 MiB (messages.MaxContextFile)", nil},
		{"no docs in folder", empty, "no .md, .txt or .html file", ErrNotDocs},
	} {
		_, err := Load([]string{tc.path})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Load = %v, want an error containing %q", tc.name, err, tc.want)
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: Load = %v, want errors.Is %v", tc.name, err, tc.is)
		}
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCorpusConcurrentSelect: one corpus serves concurrent calls (run with -race).
func TestCorpusConcurrentSelect(t *testing.T) {
	t.Parallel()
	c := NewCorpus(chunks)
	done := make(chan Selection)
	for range 4 {
		go func() { done <- c.Select("verify the CRC checksum", 150) }()
	}
	for range 4 {
		if sel := <-done; !sel.Retrieved || len(sel.Hits) == 0 || sel.Hits[0].Heading != "Checksums" {
			t.Errorf("concurrent Select = %+v, want the checksum chunk first", sel)
		}
	}
}

// TestStripHTMLKeepsTheRest: an element that opens a skipped part and is
// never closed in the source (a self-closing <svg/>, an omitted </head>)
// ends where a browser ends it: the text after it is kept. A heading is
// one line whatever its layout, and an empty one writes nothing.
func TestStripHTMLKeepsTheRest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, doc, want string }{
		{"self-closing svg", `<p>Before <svg viewBox="0 0 1 1"/> after.</p><p>Next paragraph.</p>`, "Before  after.\n\nNext paragraph."},
		{"omitted head end", `<html><head><title>T</title><body><h1>Title</h1><p>Body text.</p>`, "# Title\n\nBody text."},
		{"pretty-printed heading", "<h2>\n    Frame\n    format\n</h2>\n<p>A frame.</p>", "## Frame format\n\nA frame."},
		{"empty heading", `<h2> </h2><h3><svg/></h3><p>Text.</p>`, "Text."},
	} {
		if got := StripHTML(tc.doc); got != tc.want {
			t.Errorf("%s: StripHTML = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestLoadNamesUnique: two files of one name in different folders keep
// enough of their paths to be told apart in prompts and context_used.
func TestLoadNamesUnique(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a", "README.md"), "a")
	write(t, filepath.Join(dir, "b", "README.md"), "b")
	write(t, filepath.Join(dir, "x", "docs", "guide.md"), "x")
	write(t, filepath.Join(dir, "y", "docs", "guide.md"), "y")
	write(t, filepath.Join(dir, "c", "other.md"), "c")
	b, err := Load([]string{filepath.Join(dir, "a", "README.md"), filepath.Join(dir, "b", "README.md"),
		filepath.Join(dir, "x", "docs"), filepath.Join(dir, "y", "docs"), filepath.Join(dir, "c", "other.md"), filepath.Join(dir, "a", "README.md")})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range b.Files {
		got = append(got, f.Path+"="+f.Text)
	}
	want := []string{"a/README.md=a", "b/README.md=b", "x/docs/guide.md=x", "y/docs/guide.md=y", "other.md=c"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
}

// TestLoadFollowsLinks: a folder given as a symbolic link is read (it came
// out empty), and links inside a folder are followed, to files and
// folders, a loop read once.
func TestLoadFollowsLinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	write(t, filepath.Join(real, "guide.md"), "guide")
	write(t, filepath.Join(dir, "elsewhere", "more.md"), "more")
	link := filepath.Join(dir, "docs")
	for _, l := range [][2]string{{real, link}, {filepath.Join(dir, "elsewhere", "more.md"), filepath.Join(real, "more.md")},
		{real, filepath.Join(real, "loop")}} {
		if err := os.Symlink(l[0], l[1]); err != nil {
			t.Fatal(err)
		}
	}
	b, err := Load([]string{link})
	if err != nil {
		t.Fatal(err)
	}
	want := []messages.ContextFile{{Path: "docs/guide.md", Text: "guide"}, {Path: "docs/more.md", Text: "more"}}
	if diff := cmp.Diff(want, b.Files); diff != "" {
		t.Errorf("Load of a linked folder (-want +got):\n%s", diff)
	}
	files, err := FolderFiles(link, false)
	if err != nil {
		t.Fatal(err)
	}
	var links []string
	for _, f := range files {
		if f.Link != "" {
			links = append(links, filepath.Base(f.Link))
		}
	}
	if diff := cmp.Diff([]string{"loop", "more.md"}, links); diff != "" {
		t.Errorf("FolderFiles without following: links (-want +got):\n%s", diff)
	}
}
