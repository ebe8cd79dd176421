package bwrap

import (
	"math/rand/v2"
	"sync"
)

// uidPool hands out distinct host uids from [base, base+count). Each
// concurrent sandbox runs as its own uid so that RLIMIT_NPROC, which the
// kernel counts per real uid, limits one run and not all of them together.
// Other processes sharing the range (another worker on the host) collide
// only by chance, and then merely share a process budget.
type uidPool struct {
	base, count uint32
	mu          sync.Mutex
	used        map[uint32]bool
}

func (p *uidPool) get() uint32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used == nil {
		p.used = map[uint32]bool{}
	}
	for {
		uid := p.base + rand.Uint32N(p.count)
		if !p.used[uid] {
			p.used[uid] = true
			return uid
		}
	}
}

func (p *uidPool) put(uid uint32) {
	p.mu.Lock()
	delete(p.used, uid)
	p.mu.Unlock()
}
