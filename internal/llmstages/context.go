package llmstages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/autocoder/autocoder/internal/docsearch"
	"github.com/autocoder/autocoder/internal/objects"
	"github.com/autocoder/autocoder/internal/prompts"
	"github.com/autocoder/autocoder/pkg/messages"
)

// ContextSource fetches a job's context bundle (messages.ContextBundle) by
// its object reference to a local file, refusing an object over maxBytes
// before downloading it (objects.ErrTooLarge); *objects.Store is one.
type ContextSource interface {
	FetchMax(ctx context.Context, r messages.SampleRef, maxBytes int64) (string, error)
}

var _ ContextSource = (*objects.Store)(nil)

// Defaults of Options.ContextBytes and Options.ChunkBytes.
const (
	DefaultContextBytes = 24 << 10
	DefaultChunkBytes   = 1500
)

// maxBundleBytes bounds a bundle file as read: its texts' bound plus room
// for JSON escaping.
const maxBundleBytes = 2*messages.MaxContextBytes + 1<<20

// planWithContext and solutionWithContext are a stage's output with the
// context chunks its prompt held beside the stage's own fields; the
// coordinator decodes each half on its own.
type planWithContext struct {
	messages.Plan
	messages.ContextUse
}

type solutionWithContext struct {
	messages.Solution
	messages.ContextUse
	// Plan is the plan a one-round code call wrote (CodeInput.PlanInline);
	// nil when it was not asked for or the model left it out.
	Plan *messages.Plan `json:"plan,omitempty"`
}

// withContext puts the job's documentation into msgs: all of it when it
// fits Options.ContextBytes, else the chunks that best match query. It
// returns what went in, nil when the job has no context. The budget
// counts each chunk as prompts.WithDocs renders it (label, fence and
// text); the section's fixed heading, a few hundred bytes, is outside it.
func (h *Handlers) withContext(ctx context.Context, stage messages.Stage, task messages.TaskSpec, query string, msgs []messages.ChatMessage) ([]messages.ChatMessage, *messages.StageContext, error) {
	if len(task.Context) == 0 {
		return msgs, nil, nil
	}
	corpus, err := h.corpus(ctx, stage, task.Context)
	if err != nil {
		return nil, nil, err
	}
	sel := corpus.Select(query, h.cfg.ContextBytes)
	if len(sel.Hits) == 0 && sel.Dropped > 0 {
		h.log.Warn("no documentation chunk fits the context budget: the prompt goes without documentation",
			"stage", stage, "matching_chunks", sel.Dropped, "context_bytes", h.cfg.ContextBytes, "chunk_bytes", h.cfg.ChunkBytes)
	}
	use := &messages.StageContext{Retrieved: sel.Retrieved, Chunks: make([]messages.ContextChunk, 0, len(sel.Hits))}
	docs := make([]prompts.DocChunk, 0, len(sel.Hits))
	for _, hit := range sel.Hits {
		docs = append(docs, prompts.DocChunk{File: hit.File, Index: hit.Index, Heading: hit.Heading, Text: hit.Text})
		use.Chunks = append(use.Chunks, messages.ContextChunk{File: hit.File, Index: hit.Index, Heading: hit.Heading, Score: roundScore(hit.Score)})
	}
	return prompts.WithDocs(msgs, docs, sel.Retrieved), use, nil
}

// renderedSize is what a chunk costs in a prompt: the bytes
// prompts.WithDocs writes for it, label and fence included.
func renderedSize(c docsearch.Chunk) int {
	return docsMessageLen(c) - docsHeaderLen()
}

// docsMessageLen is the length of the documentation message of chunks.
func docsMessageLen(chunks ...docsearch.Chunk) int {
	docs := make([]prompts.DocChunk, len(chunks))
	for i, c := range chunks {
		docs[i] = prompts.DocChunk{File: c.File, Index: c.Index, Heading: c.Heading, Text: c.Text}
	}
	out := prompts.WithDocs([]messages.ChatMessage{{Role: "user"}}, docs, true)
	return len(out[0].Content)
}

// docsHeaderLen is the length of the documentation message's heading, the
// part that does not depend on its chunks (the longer, retrieved, one):
// the message of a and b is the heading once and each chunk's part.
var docsHeaderLen = sync.OnceValue(func() int {
	a, b := docsearch.Chunk{File: "a.md", Text: "a"}, docsearch.Chunk{File: "b.md", Index: 1, Heading: "B", Text: "b"}
	return docsMessageLen(a) + docsMessageLen(b) - docsMessageLen(a, b)
})

// contextChunks fetches and splits every bundle of the job's context,
// each once (a reference given twice is read once). The bounds of a
// bundle (messages.MaxContextFiles and MaxContextBytes) hold for the
// whole context, however many bundles it has: an object over the size
// of a bundle is refused before it is downloaded.
func (h *Handlers) contextChunks(ctx context.Context, stage messages.Stage, refs []string) ([]docsearch.Chunk, error) {
	if h.cfg.Context == nil {
		return nil, badInput(stage, "the job has context but this llm-worker has no context store (llmstages.Config.Context)")
	}
	var chunks []docsearch.Chunk
	files, text := 0, 0
	for _, ref := range refs {
		if _, ok := messages.ParseObjectRef(ref); !ok {
			return nil, badInput(stage, "context entry %q is not an object reference (submit uploads context files)", ref)
		}
		path, err := h.cfg.Context.FetchMax(ctx, messages.SampleRef{Name: "context", Object: ref, FileName: "context.json"}, maxBundleBytes)
		if errors.Is(err, objects.ErrBadObject) {
			return nil, badInput(stage, "context %s: %v", ref, err)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: fetch context %s: %w", stage, ref, err)
		}
		b, err := readBundle(path)
		if err != nil {
			return nil, badInput(stage, "context %s: %v", ref, err)
		}
		files += len(b.Files)
		for _, f := range b.Files {
			text += len(f.Text)
		}
		if files > messages.MaxContextFiles || text > messages.MaxContextBytes {
			return nil, badInput(stage, "context: its %d bundles hold more than %d files or %s of text (messages.MaxContextFiles, MaxContextBytes, for the whole context)",
				len(refs), messages.MaxContextFiles, messages.FormatBytes(messages.MaxContextBytes))
		}
		chunks = append(chunks, docsearch.Split(b.Files, h.cfg.ChunkBytes)...)
	}
	return chunks, nil
}

// maxCorpora is how many contexts (lists of bundle references) a worker
// keeps split and indexed: the maxCorpora built last, first in first out
// (a hit does not keep one longer). Each holds at most
// messages.MaxContextBytes of text across its bundles (contextChunks),
// with its chunks and their index.
const maxCorpora = 4

// corpora keeps the last contexts' corpora: a job's plan, code and fix
// calls, and its retries, split and index its bundle once.
type corpora struct {
	mu    sync.Mutex
	byKey map[string]*docsearch.Corpus
	order []string // oldest first
}

func (c *corpora) get(key string) *docsearch.Corpus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byKey[key]
}

func (c *corpora) put(key string, v *docsearch.Corpus) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey == nil {
		c.byKey = map[string]*docsearch.Corpus{}
	}
	if _, ok := c.byKey[key]; !ok {
		c.order = append(c.order, key)
	}
	c.byKey[key] = v
	for len(c.order) > maxCorpora {
		delete(c.byKey, c.order[0])
		c.order = c.order[1:]
	}
}

// corpus returns the job's context as a corpus, from the cache or built.
func (h *Handlers) corpus(ctx context.Context, stage messages.Stage, refs []string) (*docsearch.Corpus, error) {
	refs = dedupe(refs)
	key := strings.Join(refs, "\n")
	if c := h.corpora.get(key); c != nil {
		return c, nil
	}
	chunks, err := h.contextChunks(ctx, stage, refs)
	if err != nil {
		return nil, err
	}
	c := docsearch.NewCorpusSized(chunks, renderedSize)
	h.corpora.put(key, c)
	return c, nil
}

// dedupe is refs without repeats, in order.
func dedupe(refs []string) []string {
	seen := make(map[string]bool, len(refs))
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// readBundle reads and checks a context bundle file.
func readBundle(path string) (messages.ContextBundle, error) {
	var b messages.ContextBundle
	f, err := os.Open(path)
	if err != nil {
		return b, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxBundleBytes+1))
	if err != nil {
		return b, err
	}
	if len(data) > maxBundleBytes {
		return b, fmt.Errorf("bundle larger than %s", messages.FormatBytes(maxBundleBytes))
	}
	if err := json.Unmarshal(data, &b); err != nil {
		return b, fmt.Errorf("malformed bundle: %w", err)
	}
	total := 0
	for _, f := range b.Files {
		total += len(f.Text)
	}
	if len(b.Files) > messages.MaxContextFiles || total > messages.MaxContextBytes {
		return b, fmt.Errorf("bundle over the context bounds (%d files, %s of text)", len(b.Files), messages.FormatBytes(int64(total)))
	}
	return b, nil
}

// reflectionQuery is a fix stage's retrieval query: the task and the errors.
func reflectionQuery(in messages.FixInput) string {
	var b strings.Builder
	b.WriteString(in.Task.Prompt)
	for _, f := range in.Failures {
		b.WriteString("\n" + f.ErrorMessage + "\n" + f.ActualBehavior)
	}
	return b.String()
}

func roundScore(s float64) float64 { return float64(int64(s*1000+0.5)) / 1000 }
