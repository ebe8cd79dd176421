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
// its object reference to a local file; *objects.Store is one.
type ContextSource interface {
	Fetch(ctx context.Context, r messages.SampleRef) (string, error)
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
}

// withContext puts the job's documentation into msgs: all of it when it
// fits Options.ContextBytes, else the chunks that best match query. It
// returns what went in, nil when the job has no context.
func (h *Handlers) withContext(ctx context.Context, stage messages.Stage, task messages.TaskSpec, query string, msgs []messages.ChatMessage) ([]messages.ChatMessage, *messages.StageContext, error) {
	if len(task.Context) == 0 {
		return msgs, nil, nil
	}
	corpus, err := h.corpus(ctx, stage, task.Context)
	if err != nil {
		return nil, nil, err
	}
	sel := corpus.Select(query, h.cfg.ContextBytes)
	use := &messages.StageContext{Retrieved: sel.Retrieved, Chunks: make([]messages.ContextChunk, 0, len(sel.Hits))}
	docs := make([]prompts.DocChunk, 0, len(sel.Hits))
	for _, hit := range sel.Hits {
		docs = append(docs, prompts.DocChunk{File: hit.File, Index: hit.Index, Heading: hit.Heading, Text: hit.Text})
		use.Chunks = append(use.Chunks, messages.ContextChunk{File: hit.File, Index: hit.Index, Heading: hit.Heading, Score: roundScore(hit.Score)})
	}
	return prompts.WithDocs(msgs, docs, sel.Retrieved), use, nil
}

// contextChunks fetches and splits every bundle of the job's context.
func (h *Handlers) contextChunks(ctx context.Context, stage messages.Stage, refs []string) ([]docsearch.Chunk, error) {
	if h.cfg.Context == nil {
		return nil, badInput(stage, "the job has context but this llm-worker has no context store (llmstages.Config.Context)")
	}
	var chunks []docsearch.Chunk
	for _, ref := range refs {
		if _, ok := messages.ParseObjectRef(ref); !ok {
			return nil, badInput(stage, "context entry %q is not an object reference (submit uploads context files)", ref)
		}
		path, err := h.cfg.Context.Fetch(ctx, messages.SampleRef{Name: "context", Object: ref, FileName: "context.json"})
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
		chunks = append(chunks, docsearch.Split(b.Files, h.cfg.ChunkBytes)...)
	}
	return chunks, nil
}

// maxCorpora is how many jobs' contexts a worker keeps split and indexed
// (each at most messages.MaxContextBytes of text).
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
	key := strings.Join(refs, "\n")
	if c := h.corpora.get(key); c != nil {
		return c, nil
	}
	chunks, err := h.contextChunks(ctx, stage, refs)
	if err != nil {
		return nil, err
	}
	c := docsearch.NewCorpus(chunks)
	h.corpora.put(key, c)
	return c, nil
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
