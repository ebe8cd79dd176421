package coordinator

import "sync"

// DefaultStateCacheBytes is Config.StateCacheBytes's default: the records
// of a few hundred jobs at their largest, thousands at their usual size.
const DefaultStateCacheBytes = 64 << 20

// stateCache keeps each job's record and revision as this coordinator
// last stored them, so the next event of the job steps without reading
// the state bucket. A copy gone stale (another coordinator moved the job,
// an operator replayed a dead letter) shows up as a compare-and-set
// conflict on the next store, and the job is read afresh (apply). It is
// bounded by the records' encoded size; past the bound, entries are
// dropped in map order (a miss costs one read). A finished job is dropped:
// late inputs of it read the bucket.
//
// The records are shared read-only: Step never changes the state it is
// given, and a record is replaced whole, never changed in place.
type stateCache struct {
	mu    sync.Mutex
	limit int
	used  int
	jobs  map[string]cachedRecord
}

type cachedRecord struct {
	rec  record
	rev  uint64
	size int  // encoded bytes, counted against limit
	sent bool // rec's outbox is out, or going out in a turn before any later one's (outbox.go): the next step need not publish it again
}

// newStateCache returns a cache of limit bytes; nil (no cache) for a
// negative limit.
func newStateCache(limit int) *stateCache {
	if limit < 0 {
		return nil
	}
	return &stateCache{limit: limit, jobs: map[string]cachedRecord{}}
}

// get returns the job's record and revision.
func (c *stateCache) get(jobID string) (record, uint64, bool) {
	if c == nil {
		return record{}, 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.jobs[jobID]
	return e.rec, e.rev, ok
}

// put keeps rec at rev (size bytes encoded), or drops the job's entry
// when rec's job is done.
func (c *stateCache) put(jobID string, rec record, rev uint64, size int) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(jobID)
	if rec.State.Done() || size > c.limit {
		return
	}
	for id := range c.jobs {
		if c.used+size <= c.limit {
			break
		}
		c.dropLocked(id)
	}
	c.jobs[jobID] = cachedRecord{rec: rec, rev: rev, size: size}
	c.used += size
}

// markSent notes that the outbox of the job's record at rev is out; it
// reports false when the kept record is no longer at rev.
func (c *stateCache) markSent(jobID string, rev uint64) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.jobs[jobID]
	if !ok || e.rev != rev {
		return false
	}
	e.sent = true
	c.jobs[jobID] = e
	return true
}

// sent reports whether the kept record of the job at rev has its outbox
// out already.
func (c *stateCache) sent(jobID string, rev uint64) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.jobs[jobID]
	return ok && e.rev == rev && e.sent
}

// drop forgets the job.
func (c *stateCache) drop(jobID string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(jobID)
}

func (c *stateCache) dropLocked(jobID string) {
	if e, ok := c.jobs[jobID]; ok {
		c.used -= e.size
		delete(c.jobs, jobID)
	}
}
