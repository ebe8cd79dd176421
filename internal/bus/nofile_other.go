//go:build !unix

package bus

// OpenFileLimit is unknown here (0): the caps are the configured ones.
func OpenFileLimit() int { return 0 }
