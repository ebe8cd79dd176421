package submit

import (
	"fmt"
	"time"

	"github.com/autocoder/autocoder/pkg/messages"
)

// progress prints stage progress to Stderr: on a terminal, the stages in
// flight are redrawn on one status line; elsewhere, one line per finished
// stage. Each line has the stage's own duration (from its stage_started
// event, when a worker took it, to its stage_finished, as the coordinator
// timed them), how long it waited in its queue before (from its
// stage_queued), and the job's elapsed time; a test run or diagnosis with
// failing tests adds a line that names them.
type progress struct {
	io      IO
	start   time.Time
	running map[int]messages.Stage
	started map[int]time.Time // stage_started time by seq
	queued  map[int]time.Time // stage_queued time by seq
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
	return &progress{io: io, start: time.Now(), running: map[int]messages.Stage{},
		started: map[int]time.Time{}, queued: map[int]time.Time{}, tries: map[stageIteration]int{}}
}

func (p *progress) event(e messages.Event) error {
	switch e.Type {
	case messages.EventStageQueued:
		p.running[e.Seq] = e.Stage
		p.queued[e.Seq] = e.Time
	case messages.EventStageStarted:
		p.running[e.Seq] = e.Stage
		p.started[e.Seq] = e.Time
	case messages.EventStageFinished:
		p.finished(e)
	case messages.EventToolCall:
		if t := e.Tool; t != nil {
			p.clear()
			fmt.Fprintf(p.io.Stderr, "  tool %-10s %s  %s  %dms  [%s]\n", messages.QuoteName(t.Tool), messages.Printable(t.Arguments), messages.Printable(t.Verdict), t.DurationMS, time.Since(p.start).Round(100*time.Millisecond))
		}
	case messages.EventJobFinished:
		p.clear()
		return nil
	}
	if p.io.Terminal && len(p.running) > 0 {
		fmt.Fprintf(p.io.Stderr, "\r\033[K  running:")
		for _, s := range p.running {
			fmt.Fprintf(p.io.Stderr, " %s", messages.QuoteName(string(s)))
		}
	}
	return nil
}

// finished prints the line of a finished stage, and its note.
func (p *progress) finished(e messages.Event) {
	w := p.io.Stderr
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
	took := p.took(e)
	delete(p.started, e.Seq)
	delete(p.queued, e.Seq)
	fmt.Fprintf(w, "  %-12s iteration %d%s  %s%s  took %s  [%s in all]\n", messages.QuoteName(string(e.Stage)), e.Iteration, try,
		messages.Printable(e.Outcome), cached, took, time.Since(p.start).Round(100*time.Millisecond))
	if e.Message != "" {
		fmt.Fprintf(w, "  %-12s %s\n", "", messages.Printable(oneLine(e.Message)))
	}
}

// took is how long a finished stage ran, and waited in its queue before:
// "1.2s", "1.2s (queued 5s)"; "?" when it was followed from after it
// started. A stage answered from the cache, which no worker announced as
// started, ran from its dispatch.
func (p *progress) took(e messages.Event) string {
	queued, qok := p.queued[e.Seq]
	started, sok := p.started[e.Seq]
	round := func(d time.Duration) string { return d.Round(100 * time.Millisecond).String() }
	switch {
	case e.Time.IsZero():
		return "?"
	case sok && qok && started.Sub(queued) >= 100*time.Millisecond:
		return round(e.Time.Sub(started)) + " (queued " + round(started.Sub(queued)) + ")"
	case sok:
		return round(e.Time.Sub(started))
	case qok:
		return round(e.Time.Sub(queued))
	}
	return "?"
}

func (p *progress) clear() {
	if p.io.Terminal {
		fmt.Fprint(p.io.Stderr, "\r\033[K")
	}
}

func (p *progress) done() { p.clear() }
