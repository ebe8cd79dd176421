package bwrap

import (
	"cmp"
	"sync"

	"github.com/autocoder/autocoder/internal/sandbox"
)

// A spare: the next warm run's child, forked and placed in a cgroup with
// the default limits before that run is asked for. Moving a process into
// a cgroup v1 hierarchy waits for an RCU grace period when none has
// passed recently (10-15 ms on this kind of host, a quarter of a warm
// test run), and the child moves itself before it reads anything of its
// run. A spare makes that move while the zygote's previous run is under
// way; the next run with the default limits (memory, CPUs, output limit,
// no stdio bridge) sends its request to the spare's child and skips it.
// A spare is used once, as any warm child is: it is a fork of the zygote
// that has read nothing yet, so the isolation between runs is unchanged.
// Any other run, and a run that finds no spare, takes the usual path.

// warmSpare is a zygote's child waiting for a run's request.
type warmSpare struct {
	w  *warmRun
	cg *runCgroup
}

// spares holds a zygote's spare: at most one, made after each run.
type spares struct {
	mu      sync.Mutex
	spare   *warmSpare
	making  bool
	dropped bool           // the zygote is gone or going: no more spares
	made    sync.WaitGroup // the making in progress, which uses the zygote's control socket
}

// spareFits says whether a run of spec with these limits can take a spare.
func spareFits(spec sandbox.RunSpec, memory int64, cpus float64) bool {
	return spec.Stdio == nil && memory == sandbox.DefaultMemory && cpus == sandbox.DefaultCPUs &&
		cmp.Or(spec.OutputLimit, sandbox.DefaultOutputLimit) == sandbox.DefaultOutputLimit
}

// takeSpare returns z's spare for a run of spec, or nil.
func (z *zygote) takeSpare(spec sandbox.RunSpec, memory int64, cpus float64) *warmSpare {
	if !spareFits(spec, memory, cpus) {
		return nil
	}
	z.spares.mu.Lock()
	defer z.spares.mu.Unlock()
	s := z.spares.spare
	z.spares.spare = nil
	return s
}

// makeSpare makes z a spare in the background, unless it has one or one
// is being made.
func (b *Backend) makeSpare(z *zygote) {
	if z.isDead() { // its runs fall back to cold ones; the next run replaces it
		return
	}
	z.spares.mu.Lock()
	if z.spares.spare != nil || z.spares.making || z.spares.dropped {
		z.spares.mu.Unlock()
		return
	}
	z.spares.making = true
	z.spares.made.Add(1)
	z.spares.mu.Unlock()
	go func() {
		defer z.spares.made.Done()
		s := b.newSpare(z)
		z.spares.mu.Lock()
		z.spares.making = false
		keep := s != nil && !z.spares.dropped
		if keep {
			z.spares.spare = s
		}
		z.spares.mu.Unlock()
		if s != nil && !keep {
			b.dropSpare(s)
		}
	}()
}

// newSpare forks z a child into a new cgroup with the default limits; nil
// when that fails (the next run takes the usual path and says why).
func (b *Backend) newSpare(z *zygote) *warmSpare {
	cg, err := b.cg.create(*b.runCgroupLimits(sandbox.DefaultMemory, sandbox.DefaultCPUs))
	if err != nil {
		return nil
	}
	w, err := b.sendRun(z, sandbox.RunSpec{}, cg)
	if err != nil {
		cg.kill()
		b.destroyCgroup(cg)
		return nil
	}
	return &warmSpare{w: w, cg: cg}
}

// dropSpares ends z's spare, if any, and makes no more: z is gone or
// going. It returns once no spare is being made, so z's control socket
// may then be closed.
func (b *Backend) dropSpares(z *zygote) {
	z.spares.mu.Lock()
	s := z.spares.spare
	z.spares.spare, z.spares.dropped = nil, true
	z.spares.mu.Unlock()
	if s != nil {
		b.dropSpare(s)
	}
	z.spares.made.Wait() // a spare made meanwhile is dropped by its maker
}

// dropSpare kills a spare's child and removes its cgroup.
func (b *Backend) dropSpare(s *warmSpare) {
	s.cg.kill()
	s.w.close()
	s.w.waitOutput()
	b.destroyCgroup(s.cg)
}
