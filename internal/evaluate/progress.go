package evaluate

import (
	"fmt"
	"io"
	"sync"

	"github.com/schollz/progressbar/v3"
)

// progress shows how far the evaluation is: a bar (progressbar, on a
// terminal) whose description keeps the running figures, or a line per
// finished problem.
type progress struct {
	mu    sync.Mutex
	bar   *progressbar.ProgressBar // nil: lines
	w     io.Writer
	total int
	count int
}

func newProgress(bar bool, w io.Writer, total, done int) *progress {
	p := &progress{w: w, total: total, count: done}
	if bar {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w), progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true), progressbar.OptionSetWidth(30), progressbar.OptionFullWidth(),
			progressbar.OptionSetDescription("eval"), progressbar.OptionShowDescriptionAtLineEnd())
		_ = p.bar.Set(done)
	}
	return p
}

// done counts a finished problem; rows are all the rows so far.
func (p *progress) done(r Row, rows map[string]Row) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.count++
	var pass, falseSuccess, n int
	for _, row := range rows {
		if row.Pending || row.Hidden == HiddenError {
			continue // pass@1 is over the problems whose hidden tests ran, as the report's (Summary.Judged)
		}
		n++
		if row.Hidden == HiddenPassed {
			pass++
		}
		if row.FalseSuccess() {
			falseSuccess++
		}
	}
	figures := fmt.Sprintf("pass@1 %d/%d, false success %d", pass, n, falseSuccess)
	if p.bar != nil {
		p.bar.Describe(figures)
		_ = p.bar.Add(1)
		return
	}
	verdict := r.Hidden
	switch {
	case r.FalseSuccess():
		verdict += " (false success)"
	case r.FalseFailure():
		verdict += " (false failure)"
	}
	fmt.Fprintf(p.w, "[%d/%d] %s: %s, hidden tests %s, %d iterations, %d model calls, %.1fs; %s\n",
		p.count, p.total, r.TaskID, r.Status, verdict, r.Iterations, r.LLMCalls, r.WallSeconds, figures)
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.w)
	}
}
