package profile

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
)

// ctxCheckRows is how often (in rows) a scan looks at ctx.
const ctxCheckRows = 1 << 13

// firstLinesShown is how many lines the plain-text fallback keeps.
const firstLinesShown = 20

// scanCSV reads delimited text with encoding/csv: quoted fields may hold
// delimiters and newlines; stray quotes are kept (LazyQuotes) and rows may
// be ragged, as real exports are.
func (sc *scanner) scanCSV(delim rune) error {
	sp := sc.sp
	sp.Format, sp.Delimiter = FormatCSV, delim
	if delim == '\t' {
		sp.Format = FormatTSV
	}
	r := csv.NewReader(sc.limit)
	r.Comma = delim
	r.LazyQuotes = true
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		sp.Format = FormatEmpty
		sp.Notes = append(sp.Notes, "the file has no rows")
		return nil
	}
	if err != nil {
		return fmt.Errorf("read header: %w", err)
	}
	t := sc.newTable(slices.Clone(header))
	r.ReuseRecord = false // records cross to another goroutine
	truncated, err := t.pipeline(func() ([]string, error) {
		sc.limit.reset()
		return r.Read()
	})
	if err != nil {
		return err
	}
	t.finish(truncated)
	if t.rows == 0 {
		sp.Notes = append(sp.Notes, fmt.Sprintf("header only: %d columns, no data rows", len(t.cols)))
	}
	return nil
}

// Rows travel from the reading goroutine to the column workers in batches.
const (
	batchRows    = 1024
	batchesAlive = 4 // bounds the rows in flight
)

type rowBatch struct {
	recs    [][]string
	hashes  []uint64     // cell hashes, row-major, len(table columns) per row
	pending atomic.Int32 // column workers yet to finish with the batch
}

// pipeline runs a text-row scan on several goroutines: this one reads and
// parses (next returns io.EOF at the end), hashes cells and rows, counts
// ragged rows and picks the sample rows; column workers, one per core up
// to four, each feed their share of the columns. Every column still sees
// the rows in file order and each side owns its fields of the table, so
// results do not depend on timing. It returns whether rows remain past
// the caps.
func (t *table) pipeline(next func() ([]string, error)) (truncated bool, err error) {
	cw := t.startColumnWorkers()
	defer cw.stop()
	b := cw.take()
	for {
		if t.full() {
			_, err := next()
			truncated = err == nil
			break
		}
		if t.rows%ctxCheckRows == 0 {
			if err := t.sc.ctx.Err(); err != nil {
				return false, err
			}
		}
		rec, err := next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return false, fmt.Errorf("row %d: %w", t.rows+1, err)
		}
		t.batchRow(b, rec)
		if len(b.recs) == batchRows {
			cw.send(b)
			b = cw.take()
		}
	}
	if len(b.recs) > 0 {
		cw.send(b)
	}
	return truncated, nil
}

// batchRow counts a ragged row and cuts one too long to the table's
// columns, hashes its cells and the row into b, and offers the row to
// the sample.
func (t *table) batchRow(b *rowBatch, rec []string) {
	n := len(t.cols)
	rec = t.fitRow(rec)
	rh := uint64(len(rec))
	for _, s := range rec {
		h := xxhash.Sum64String(s)
		rh = mixRowHash(rh, h)
		b.hashes = append(b.hashes, h)
	}
	for j := len(rec); j < n; j++ {
		b.hashes = append(b.hashes, 0)
	}
	b.recs = append(b.recs, rec)
	t.addRow(rh, rec)
}

// colWorkers are the column workers of a pipeline: worker w feeds columns
// w, w+workers, ... of every batch sent, and the last worker done with a
// batch hands it back for reuse.
type colWorkers struct {
	t       *table
	workers int
	free    chan *rowBatch   // batches ready to fill
	fulls   []chan *rowBatch // one per worker: batches to feed
	wg      sync.WaitGroup
}

func (t *table) startColumnWorkers() *colWorkers {
	n := len(t.cols)
	workers := max(1, min(n, runtime.GOMAXPROCS(0), 4))
	cw := &colWorkers{t: t, workers: workers, free: make(chan *rowBatch, batchesAlive), fulls: make([]chan *rowBatch, workers)}
	for range batchesAlive {
		// The hashes grow as the rows need: sized up front for a header
		// of 100k columns they were gigabytes.
		cw.free <- &rowBatch{recs: make([][]string, 0, batchRows), hashes: make([]uint64, 0, min(batchRows*n, 1<<16))}
	}
	for w := range workers {
		cw.fulls[w] = make(chan *rowBatch, batchesAlive)
		cw.wg.Add(1)
		go cw.work(w)
	}
	return cw
}

// work is worker w's loop, until its channel is closed.
func (cw *colWorkers) work(w int) {
	defer cw.wg.Done()
	cols := cw.t.cols
	n := len(cols)
	for b := range cw.fulls[w] {
		for i, rec := range b.recs {
			hs := b.hashes[i*n : (i+1)*n]
			for j := w; j < n; j += cw.workers {
				if j < len(rec) {
					cols[j].addText(rec[j], hs[j])
				} else {
					cols[j].addNull()
				}
			}
		}
		if b.pending.Add(-1) == 0 {
			clear(b.recs) // the records go with the batch, not with its reuse
			cw.free <- b
		}
	}
}

// take waits for a free batch and empties it.
func (cw *colWorkers) take() *rowBatch {
	b := <-cw.free
	b.recs, b.hashes = b.recs[:0], b.hashes[:0]
	return b
}

// send hands b to every worker.
func (cw *colWorkers) send(b *rowBatch) {
	b.pending.Store(int32(cw.workers))
	for _, c := range cw.fulls {
		c <- b
	}
}

// stop lets the workers finish what was sent and waits for them.
func (cw *colWorkers) stop() {
	for _, c := range cw.fulls {
		close(c)
	}
	cw.wg.Wait()
}

// firstLineBytes bounds what is kept of a first line: 300 characters of
// up to 4 bytes.
const firstLineBytes = 4 * 300

// scanText is the fallback for anything that is text but not a table: line
// count (within the byte cap) and the first lines.
func (sc *scanner) scanText() error {
	sp := sc.sp
	sp.Format = FormatText
	br := bufio.NewReaderSize(sc.limit, 64<<10)
	var line []byte
	inLine := false // part of a line was read
	for {
		if sc.raw.n >= sc.opts.MaxScanBytes {
			if len(line) > 0 && len(sp.FirstLines) < firstLinesShown { // the start of a line the cap cut
				sp.FirstLines = append(sp.FirstLines, truncateRunes(trimEOL(string(line)), 300))
			}
			sp.Truncated = true
			sp.Notes = append(sp.Notes, fmt.Sprintf("lines counted in the first %s of %s", sizeText(sc.raw.n), sizeText(sp.SizeBytes)))
			break
		}
		sc.limit.reset() // a text line may be any length: only the byte cap applies
		chunk, err := br.ReadSlice('\n')
		// Only a line's start is shown (300 characters): more of it is
		// not kept, or a file of one 2 GiB line is held whole.
		if len(sp.FirstLines) < firstLinesShown && len(line) < firstLineBytes {
			line = append(line, chunk[:min(len(chunk), firstLineBytes-len(line))]...)
		}
		inLine = inLine || len(chunk) > 0
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // a long line: keep reading it
		}
		if inLine { // a last line without its newline counts too, however long
			sp.Lines++
			if len(sp.FirstLines) < firstLinesShown {
				sp.FirstLines = append(sp.FirstLines, truncateRunes(trimEOL(string(line)), 300))
			}
			line, inLine = line[:0], false
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return err
		}
		if sp.Lines%ctxCheckRows == 0 {
			if err := sc.ctx.Err(); err != nil {
				return err
			}
		}
	}
	sp.ScannedBytes = sc.raw.n
	return nil
}

func trimEOL(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	return s
}
