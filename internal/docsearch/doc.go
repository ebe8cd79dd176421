// Package docsearch gives the model the parts of a job's documentation
// (JobSpec.Context) that matter for the call at hand. Load reads
// Markdown, text and HTML files or folders into a messages.ContextBundle
// (HTML reduced to its text, headings kept as Markdown headings), within
// the bounds messages.MaxContext* sets; Split cuts the files into chunks
// at headings and paragraphs; Select returns every chunk when they fit a
// byte budget, and otherwise the best BM25 matches for a query that do.
//
//	bundle, err := docsearch.Load([]string{"docs/"})               // submitter side
//	corpus := docsearch.NewCorpus(docsearch.Split(bundle.Files, 1500)) // llm-worker side, once per job (NewCorpusSized: chunks as the prompt renders them)
//	sel := corpus.Select(task.Prompt, 24<<10)                        // per call; sel.Retrieved: ranked, not all
//
// The ranker is a small Okapi BM25 (k1 1.2, b 0.75) over lower-cased
// words, with identifiers also split at '_', '.' and '-'. No Go BM25
// library on the module proxy is both maintained and this small; the
// scoring is 60 lines and tested here.
package docsearch

// Version identifies the loading, chunking and ranking rules: a change to
// any of them changes what a prompt holds, so it is part of the cache
// version of the stages that use them (llmstages). 2: HTML parsed as a
// browser does, unique file names, and chunks counted as rendered.
const Version = "2"
