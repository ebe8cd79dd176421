package bwrap

// KillZygotes kills the backend's warm runners as a crash would and
// returns how many there were.
func KillZygotes(b *Backend) int { return b.killZygotes() }

// RunCgroup makes a cgroup with a default run's limits (benchmarks: a
// baseline scheduled as sandbox runs are) and returns its directories and
// its removal; nil dirs when the backend has no cgroups.
func RunCgroup(b *Backend) (dirs []string, remove func(), err error) {
	if b.cg == nil {
		return nil, func() {}, nil
	}
	g, err := b.cg.create(*b.runCgroupLimits(1<<30, 1))
	if err != nil {
		return nil, nil, err
	}
	return g.dirs, func() { b.destroyCgroup(g) }, nil
}

// Zygotes is how many warm runners the backend keeps (started or starting).
func Zygotes(b *Backend) int {
	b.warm.mu.Lock()
	defer b.warm.mu.Unlock()
	return len(b.warm.zygotes)
}

// MaxZygotes is the bound on Zygotes.
const MaxZygotes = warmMaxZygotes

// SpareCgroup is the cgroup directories of the spare of the backend's one
// warm runner, nil when it has none (yet).
func SpareCgroup(b *Backend) []string {
	b.warm.mu.Lock()
	defer b.warm.mu.Unlock()
	for _, slot := range b.warm.zygotes {
		select {
		case <-slot.ready:
		default:
			continue
		}
		if slot.z == nil {
			continue
		}
		slot.z.spares.mu.Lock()
		s := slot.z.spares.spare
		slot.z.spares.mu.Unlock()
		if s != nil {
			return s.cg.dirs
		}
	}
	return nil
}
