package docsearch

import "sync"

// Selection is what of a context goes into one prompt.
type Selection struct {
	Hits []Hit
	// Retrieved is true when the context did not fit the budget and Hits
	// are the best matches for the query; false when Hits are every chunk,
	// in order, with score 0.
	Retrieved bool
	// Dropped counts the chunks that matched the query but were passed
	// over because they did not fit the room left (all of them, when
	// Hits is empty: the budget holds no chunk).
	Dropped int
}

// Corpus is a context's chunks, indexed the first time a selection needs
// the ranker. It is safe for concurrent use, so one corpus can serve every
// model call of a job.
type Corpus struct {
	chunks []Chunk
	cost   map[Chunk]int
	total  int // bytes, as cost counts them
	once   sync.Once
	ix     *Index
}

// NewCorpus returns a corpus of chunks, each costing Size.
func NewCorpus(chunks []Chunk) *Corpus { return NewCorpusSized(chunks, Size) }

// NewCorpusSized returns a corpus of chunks in which a chunk costs what
// cost says: the bytes the caller's prompt spends on it, rendered.
func NewCorpusSized(chunks []Chunk, cost func(Chunk) int) *Corpus {
	c := &Corpus{chunks: chunks, cost: make(map[Chunk]int, len(chunks))}
	for _, ch := range chunks {
		n := cost(ch)
		c.cost[ch] = n
		c.total += n
	}
	return c
}

// Select is the package's Select over the corpus.
func (c *Corpus) Select(query string, budget int) Selection {
	if c.total <= budget {
		hits := make([]Hit, len(c.chunks))
		for i, ch := range c.chunks {
			hits[i] = Hit{Chunk: ch}
		}
		return Selection{Hits: hits}
	}
	c.once.Do(func() { c.ix = NewIndex(c.chunks) })
	sel := Selection{Retrieved: true}
	room := budget
	for _, h := range c.ix.Search(query) {
		if n := c.cost[h.Chunk]; n <= room {
			sel.Hits = append(sel.Hits, h)
			room -= n
		} else {
			sel.Dropped++
		}
	}
	return sel
}

// Select returns every chunk when their text fits budget bytes, and
// otherwise the chunks that best match query, best first, as many as fit
// (a chunk that does not fit is passed over for smaller ones below it).
// Chunks that share no term with the query are never retrieved.
func Select(chunks []Chunk, query string, budget int) Selection {
	return NewCorpus(chunks).Select(query, budget)
}

// Size is a chunk's cost by default, an estimate: its text, its file name
// and heading and 32 bytes of wrapping. A caller that knows how it renders
// chunks counts that instead (NewCorpusSized).
func Size(c Chunk) int { return len(c.Text) + len(c.File) + len(c.Heading) + 32 }
