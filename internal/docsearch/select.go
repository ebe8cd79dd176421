package docsearch

// Selection is what of a context goes into one prompt.
type Selection struct {
	Hits []Hit
	// Retrieved is true when the context did not fit the budget and Hits
	// are the best matches for the query; false when Hits are every chunk,
	// in order, with score 0.
	Retrieved bool
}

// Select returns every chunk when their text fits budget bytes, and
// otherwise the chunks that best match query, best first, as many as fit
// (a chunk that does not fit is passed over for smaller ones below it).
// Chunks that share no term with the query are never retrieved.
func Select(chunks []Chunk, query string, budget int) Selection {
	total := 0
	for _, c := range chunks {
		total += size(c)
	}
	if total <= budget {
		hits := make([]Hit, len(chunks))
		for i, c := range chunks {
			hits[i] = Hit{Chunk: c}
		}
		return Selection{Hits: hits}
	}
	sel := Selection{Retrieved: true}
	room := budget
	for _, h := range NewIndex(chunks).Search(query) {
		if n := size(h.Chunk); n <= room {
			sel.Hits = append(sel.Hits, h)
			room -= n
		}
	}
	return sel
}

// size is what a chunk costs in a prompt: its text and a line naming it.
func size(c Chunk) int { return len(c.Text) + len(c.File) + len(c.Heading) + 32 }
