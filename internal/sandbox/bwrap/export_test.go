package bwrap

// KillZygotes kills the backend's warm runners as a crash would and
// returns how many there were.
func KillZygotes(b *Backend) int { return b.killZygotes() }
