package sandbox

import (
	"sort"
	"strings"

	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/pkg/messages"
)

// NormalizePackages validates requirement strings and returns them
// canonical (normalized name, sorted extras), deduplicated and sorted, so
// equivalent specs hash alike.
func NormalizePackages(pkgs []string) ([]string, error) {
	var bad []string
	set := map[string]bool{}
	for _, p := range pkgs {
		p = strings.TrimSpace(p)
		if !messages.PackageNameRe.MatchString(p) {
			bad = append(bad, p)
			continue
		}
		name := protocol.CanonicalName(p)
		rest := strings.TrimLeft(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")
		if strings.HasPrefix(rest, "[") {
			end := strings.IndexByte(rest, ']')
			extras := strings.Split(rest[1:end], ",")
			for i, e := range extras {
				extras[i] = protocol.CanonicalName(e)
			}
			sort.Strings(extras)
			name += "[" + strings.Join(extras, ",") + "]"
			rest = rest[end+1:]
		}
		set[name+rest] = true
	}
	if len(bad) > 0 {
		return nil, &InvalidPackageError{Packages: bad,
			Log: "not a package requirement (a PEP 508 name with an optional version; URLs, paths, options and shell syntax are refused)"}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}
