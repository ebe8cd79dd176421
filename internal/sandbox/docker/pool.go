package docker

import (
	"context"
	"sort"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/autocoder/autocoder/internal/sandbox"
)

// pool keeps started sandboxes (their stub waiting for a command) for hot
// images, so a run skips creating and starting a container. Each is used
// once and removed; a background filler replaces it. Only runs with the
// default memory and CPU limits use the pool: limits are fixed when a
// container is created.
type pool struct {
	b      *Backend
	kick   chan struct{}
	mu     sync.Mutex
	images map[string]*imagePool
	closed bool
}

type imagePool struct {
	ready    []*box
	lastUsed time.Time
	failedAt time.Time // the last start failed: not retried until kicked after a while
}

func newPool(b *Backend) *pool {
	return &pool{b: b, kick: make(chan struct{}, 1), images: map[string]*imagePool{}}
}

func (p *pool) enabled() bool { return p.b.cfg.PoolSize > 0 }

// touch marks image hot, dropping the least recently used beyond
// Config.PoolImages, and wakes the filler.
func (p *pool) touch(image string) {
	p.mark(image)
	p.wake()
}

// mark marks image hot, dropping the least recently used beyond
// Config.PoolImages.
func (p *pool) mark(image string) {
	if !p.enabled() {
		return
	}
	var drop []*box
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	ip := p.images[image]
	if ip == nil {
		ip = &imagePool{}
		p.images[image] = ip
	}
	ip.lastUsed = p.b.cfg.Now()
	if len(p.images) > p.b.cfg.PoolImages {
		names := make([]string, 0, len(p.images))
		for name := range p.images {
			names = append(names, name)
		}
		sort.Slice(names, func(i, j int) bool { return p.images[names[i]].lastUsed.After(p.images[names[j]].lastUsed) })
		for _, name := range names[p.b.cfg.PoolImages:] {
			drop = append(drop, p.images[name].ready...)
			delete(p.images, name)
		}
	}
	p.mu.Unlock()
	for _, bx := range drop {
		p.b.discard(bx)
	}
}

func (p *pool) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// take returns a started sandbox of image whose lease lasts past until,
// or nil (then the caller starts one). It does not wake the filler: the
// caller does once its run is over, so that starting the replacement does
// not compete with the run for CPU.
func (p *pool) take(image string, memory int64, cpus float64, until time.Time) *box {
	if !p.enabled() || memory != sandbox.DefaultMemory || cpus != sandbox.DefaultCPUs {
		return nil
	}
	defer p.mark(image)
	var stale []*box
	defer func() {
		for _, bx := range stale {
			p.b.discard(bx)
		}
	}()
	p.mu.Lock()
	defer p.mu.Unlock()
	ip := p.images[image]
	if ip == nil {
		return nil
	}
	for len(ip.ready) > 0 {
		bx := ip.ready[0]
		ip.ready = ip.ready[1:]
		if bx.expiry.After(until.Add(p.b.cfg.LeaseMargin)) {
			return bx
		}
		stale = append(stale, bx)
	}
	return nil
}

// run is the filler: it tops up the pools when woken and every half
// minute, until Close.
func (p *pool) run() {
	defer p.b.bg.Done()
	ctx, cancel := p.b.stopContext()
	defer cancel()
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.b.stop:
			return
		case <-p.kick:
		case <-t.C:
		}
		p.fill(ctx)
	}
}

// fill starts sandboxes, one at a time, until every hot image has
// Config.PoolSize fresh ones, and replaces those past half their lease.
func (p *pool) fill(ctx context.Context) {
	for ctx.Err() == nil {
		image, stale := p.next()
		for _, bx := range stale {
			p.b.discard(bx)
		}
		if image == "" {
			return
		}
		bx, err := p.b.startBox(ctx, image, sandbox.DefaultMemory, sandbox.DefaultCPUs, p.b.cfg.PoolLease, "pool", "pool", "")
		if err == nil {
			if err = p.b.makeReady(ctx, bx); err != nil {
				p.b.discard(bx)
				bx = nil
			}
		}
		p.mu.Lock()
		ip := p.images[image]
		switch {
		case err != nil:
			if ip != nil {
				ip.failedAt = p.b.cfg.Now()
			}
			if cerrdefs.IsNotFound(err) {
				delete(p.images, image)
			}
		case p.closed || ip == nil:
			p.b.discard(bx)
		default:
			ip.ready = append(ip.ready, bx)
		}
		p.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			p.b.log.Warn("warm pool: start a sandbox", "image", image, "err", err)
		}
	}
}

// next picks an image that needs a sandbox ("" if none) and takes out the
// pooled sandboxes that are past half their lease.
func (p *pool) next() (image string, stale []*box) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return "", nil
	}
	now := p.b.cfg.Now()
	for name, ip := range p.images {
		fresh := ip.ready[:0]
		for _, bx := range ip.ready {
			if now.Sub(bx.created) > p.b.cfg.PoolLease/2 {
				stale = append(stale, bx)
			} else {
				fresh = append(fresh, bx)
			}
		}
		ip.ready = fresh
		if image == "" && len(ip.ready) < p.b.cfg.PoolSize && now.Sub(ip.failedAt) > 30*time.Second {
			image = name
		}
	}
	return image, stale
}

// drain removes every pooled sandbox; the pool takes no more.
func (p *pool) drain() {
	p.mu.Lock()
	p.closed = true
	var all []*box
	for _, ip := range p.images {
		all = append(all, ip.ready...)
	}
	p.images = map[string]*imagePool{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, bx := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bx.release()
			p.b.remove(bx.id)
		}()
	}
	wg.Wait()
}

// ready counts the pooled sandboxes of image (for tests and benchmarks).
func (p *pool) ready(image string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ip := p.images[image]; ip != nil {
		return len(ip.ready)
	}
	return 0
}
