package submit

import (
	"fmt"
	"time"

	"github.com/autocoder/autocoder/pkg/messages"
)

// progress prints stage progress to Stderr: on a terminal, the stages in
// flight are redrawn on one status line; elsewhere, one line per finished stage.
type progress struct {
	io      IO
	start   time.Time
	running map[int]messages.Stage
	// tries counts finished stages per (stage, iteration): a fix re-asked
	// after a failed verification, or a rebuild, shows as "try 2", "try 3"
	// instead of an identical line.
	tries map[stageIteration]int
}

type stageIteration struct {
	stage     messages.Stage
	iteration int
}

func newProgress(io IO) *progress {
	return &progress{io: io, start: time.Now(), running: map[int]messages.Stage{}, tries: map[stageIteration]int{}}
}

func (p *progress) event(e messages.Event) error {
	w := p.io.Stderr
	switch e.Type {
	case messages.EventStageStarted:
		p.running[e.Seq] = e.Stage
	case messages.EventStageFinished:
		delete(p.running, e.Seq)
		p.clear()
		k := stageIteration{e.Stage, e.Iteration}
		p.tries[k]++
		try := ""
		if n := p.tries[k]; n > 1 {
			try = fmt.Sprintf(" try %d", n)
		}
		cached := ""
		if e.Cached {
			cached = " (cached)"
		}
		fmt.Fprintf(w, "  %-12s iteration %d%s  %s%s  [%s]\n", messages.QuoteName(string(e.Stage)), e.Iteration, try, messages.Printable(e.Outcome), cached, time.Since(p.start).Round(100*time.Millisecond))
	case messages.EventToolCall:
		if t := e.Tool; t != nil {
			p.clear()
			fmt.Fprintf(w, "  tool %-10s %s  %s  %dms  [%s]\n", messages.QuoteName(t.Tool), messages.Printable(t.Arguments), messages.Printable(t.Verdict), t.DurationMS, time.Since(p.start).Round(100*time.Millisecond))
		}
	case messages.EventJobFinished:
		p.clear()
		return nil
	}
	if p.io.Terminal && len(p.running) > 0 {
		fmt.Fprintf(w, "\r\033[K  running:")
		for _, s := range p.running {
			fmt.Fprintf(w, " %s", messages.QuoteName(string(s)))
		}
	}
	return nil
}

func (p *progress) clear() {
	if p.io.Terminal {
		fmt.Fprint(p.io.Stderr, "\r\033[K")
	}
}

func (p *progress) done() { p.clear() }
