package coordinator

import (
	"sync"

	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Steps of one job are taken one at a time in this coordinator. Results of
// one job arrive together (code and tests are dispatched at once), and the
// result consumers run several handlers: without this, the second result
// steps on the same kept record, loses the compare-and-set to the first,
// and reads the job again, a write and a read more on the hop that
// matters. Another coordinator's step still shows up as a conflict.
//
// Each job has two locks taken hand over hand: step (load, Step,
// compare-and-set, the stage commands) and then announce (the index line,
// the result, the events), so the next step need not wait for the
// previous step's events, and the events of two steps still go out in the
// order of the steps. Results and events a step fails to announce are left
// on the lock for the job's next step here, which announces them before
// its own (announceInTurn).
type jobLocks struct {
	mu   sync.Mutex
	jobs map[string]*jobLock
}

type jobLock struct {
	step, announce sync.Mutex
	users          int // holders and waiters; the entry goes at zero
	// unsent are results and events an earlier step's announce did not
	// get out, for the next step to announce first (announceInTurn).
	// Guarded by announce.
	unsent []machine.Command
	// line is the job's index line waiting for its delay (index.go).
	// Guarded by announce.
	line *messages.JobSummary
}

// acquire returns the job's locks, counted as used until release.
func (l *jobLocks) acquire(jobID string) *jobLock {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.jobs == nil {
		l.jobs = map[string]*jobLock{}
	}
	jl := l.jobs[jobID]
	if jl == nil {
		jl = &jobLock{}
		l.jobs[jobID] = jl
	}
	jl.users++
	return jl
}

// release ends a use that acquire began.
func (l *jobLocks) release(jobID string, jl *jobLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if jl.users--; jl.users == 0 {
		delete(l.jobs, jobID)
	}
}

// turn is one step's hold on its job's locks: step first, then announce.
type turn struct {
	jl         *jobLock
	announcing bool
	sent       *sentOutbox // the step's outbox, all out (outbox.go)
}

// sentOutbox is a stored record whose outbox is out.
type sentOutbox struct {
	rec record
	rev uint64
}

// begin waits for the job's step lock.
func (l *jobLocks) begin(jobID string) *turn {
	t := &turn{jl: l.acquire(jobID)}
	t.jl.step.Lock()
	return t
}

// toAnnounce trades the step lock for the announce lock, once the step's
// state is stored and its stage commands are out: the next step may begin.
func (t *turn) toAnnounce() {
	if t.announcing {
		return
	}
	t.jl.announce.Lock()
	t.jl.step.Unlock()
	t.announcing = true
}

// end lets go of whichever lock the turn holds.
func (l *jobLocks) end(jobID string, t *turn) {
	if t.announcing {
		t.jl.announce.Unlock()
	} else {
		t.jl.step.Unlock()
	}
	l.release(jobID, t.jl)
}
