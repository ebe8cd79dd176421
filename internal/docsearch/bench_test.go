package docsearch

import (
	"fmt"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/pkg/messages"
)

// BenchmarkSplitAndSelect is what the llm-worker does per model call for a
// job with context: split the bundle and retrieve for the call's query
// (the whole MaxContextBytes at the top size).
func BenchmarkSplitAndSelect(b *testing.B) {
	for _, size := range []int{32 << 10, 1 << 20, messages.MaxContextBytes} {
		files := syntheticDocs(size)
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				chunks := Split(files, 1500)
				if sel := Select(chunks, "decode the hex value of each retracted record 42", 24<<10); len(sel.Hits) == 0 {
					b.Fatal("nothing retrieved")
				}
			}
		})
	}
}

// syntheticDocs is about size bytes of Markdown in 64 KiB files.
func syntheticDocs(size int) []messages.ContextFile {
	var files []messages.ContextFile
	words := strings.Fields("frame record value hex decode sensor header flag retracted station palette theme chart legend mast battery")
	for n := 0; n*(64<<10) < size; n++ {
		var b strings.Builder
		for i := 0; b.Len() < 64<<10; i++ {
			if i%40 == 0 {
				fmt.Fprintf(&b, "\n## Section %d.%d\n\n", n, i)
			}
			fmt.Fprintf(&b, "%s %s %d. ", words[(i*7+n)%len(words)], words[(i*3+n)%len(words)], i)
		}
		files = append(files, messages.ContextFile{Path: fmt.Sprintf("docs/%03d.md", n), Text: b.String()})
	}
	return files
}
