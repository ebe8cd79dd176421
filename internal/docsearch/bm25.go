package docsearch

import (
	"math"
	"sort"
	"strings"
	"unicode"
)

// BM25 parameters: the usual Okapi values.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Index scores chunks against a query with Okapi BM25.
type Index struct {
	chunks []Chunk
	terms  []map[string]int // term frequencies per chunk
	lens   []int            // tokens per chunk
	df     map[string]int   // chunks holding each term
	avgLen float64
}

// Hit is a chunk with its score for a query.
type Hit struct {
	Chunk
	Score float64
}

// NewIndex indexes chunks; the heading counts as part of each chunk's text.
func NewIndex(chunks []Chunk) *Index {
	ix := &Index{chunks: chunks, df: map[string]int{}}
	total := 0
	for _, c := range chunks {
		tf := map[string]int{}
		toks := Tokens(c.Heading + "\n" + c.Text)
		for _, t := range toks {
			tf[t]++
		}
		for t := range tf {
			ix.df[t]++
		}
		ix.terms = append(ix.terms, tf)
		ix.lens = append(ix.lens, len(toks))
		total += len(toks)
	}
	if len(chunks) > 0 {
		ix.avgLen = float64(total) / float64(len(chunks))
	}
	return ix
}

// Search returns the chunks that share a term with the query, best first
// (ties in document order).
func (ix *Index) Search(query string) []Hit {
	q := map[string]bool{}
	for _, t := range Tokens(query) {
		q[t] = true
	}
	n := float64(len(ix.chunks))
	var hits []Hit
	for i, tf := range ix.terms {
		score := 0.0
		for t := range q {
			f := float64(tf[t])
			if f == 0 {
				continue
			}
			df := float64(ix.df[t])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			norm := 1 - bm25B + bm25B*float64(ix.lens[i])/math.Max(ix.avgLen, 1)
			score += idf * f * (bm25K1 + 1) / (f + bm25K1*norm)
		}
		if score > 0 {
			hits = append(hits, Hit{Chunk: ix.chunks[i], Score: score})
		}
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].Score > hits[b].Score })
	return hits
}

// stopwords are English words too common to rank by.
var stopwords = wordSet(`a an and are as at be by for from has have if in into is it its of on or that the
	their then there these this to was were will with which what when where who how can do does each not no so than
	use used using you your we our must should may also all any`)

func wordSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// Tokens are the lower-cased words of s without stopwords, plurals folded
// ("records" is "record"); an identifier such as read_frame or lib.open
// also yields its parts.
func Tokens(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '.' && r != '-'
	}) {
		w = strings.Trim(w, "_.-")
		if w == "" {
			continue
		}
		keep(&out, w)
		if strings.ContainsAny(w, "_.-") {
			for _, p := range strings.FieldsFunc(w, func(r rune) bool { return r == '_' || r == '.' || r == '-' }) {
				keep(&out, p)
			}
		}
	}
	return out
}

func keep(out *[]string, w string) {
	if len(w) > 1 && !stopwords[w] {
		*out = append(*out, singular(w))
	}
}

// singular folds a plain English plural: a trailing "s" goes, except
// after "s", "u" or "i" (class, status, analysis) and in short words.
func singular(w string) string {
	if len(w) <= 3 || !strings.HasSuffix(w, "s") || strings.ContainsAny(w[len(w)-2:len(w)-1], "siu") {
		return w
	}
	return w[:len(w)-1]
}
