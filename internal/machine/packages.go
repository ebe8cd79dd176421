package machine

import (
	"sort"
	"strings"

	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Package lists: the job's, the code's, the ones a build rejected. Names
// are compared by their canonical form (protocol.CanonicalName).

func validPackages(ps []string) []string {
	var out []string
	for _, p := range ps {
		p = strings.TrimSpace(p)
		if messages.PackageNameRe.MatchString(p) {
			out = append(out, p)
		}
	}
	return out
}

// normPackages dedupes by canonical name (the first spelling wins) and sorts.
func normPackages(ps []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range ps {
		c := protocol.CanonicalName(p)
		if c == "" || seen[c] {
			continue
		}
		seen[c] = true
		out = append(out, strings.TrimSpace(p))
	}
	sort.Slice(out, func(i, j int) bool { return protocol.CanonicalName(out[i]) < protocol.CanonicalName(out[j]) })
	return out
}

func newPackages(have, want []string) []string {
	h := map[string]bool{}
	for _, p := range have {
		h[protocol.CanonicalName(p)] = true
	}
	var out []string
	for _, p := range want {
		if c := protocol.CanonicalName(p); c != "" && !h[c] {
			h[c] = true
			out = append(out, strings.TrimSpace(p))
		}
	}
	return out
}

func removePackages(ps, bad []string) []string {
	b := map[string]bool{}
	for _, p := range bad {
		b[protocol.CanonicalName(p)] = true
	}
	var out []string
	for _, p := range ps {
		if !b[protocol.CanonicalName(p)] {
			out = append(out, p)
		}
	}
	return out
}
