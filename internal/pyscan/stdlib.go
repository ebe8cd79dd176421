package pyscan

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strings"
)

// StdlibScript prints the interpreter's standard library module names, one a
// line. Interpreters older than 3.10 lack sys.stdlib_module_names; for them it
// lists the builtin modules and what is installed in the stdlib directory.
// Run it with `python -I -c StdlibScript` (isolated mode, so no user site or
// PYTHON* variables change the answer) wherever the target interpreter is,
// e.g. inside a sandbox, and read its output with ParseStdlib.
const StdlibScript = `import sys
names = getattr(sys, "stdlib_module_names", None)
if names is None:
    import pkgutil, sysconfig
    names = set(sys.builtin_module_names)
    names.update(m.name for m in pkgutil.iter_modules([sysconfig.get_paths()["stdlib"]]))
print("\n".join(sorted(names)))
`

// StdlibFrom asks the interpreter python (a path or a name on $PATH) for its
// standard library. Use it when the target interpreter can be run; fall back
// to Stdlib() when it cannot.
func StdlibFrom(ctx context.Context, python string) (Set, error) {
	cmd := exec.CommandContext(ctx, python, "-I", "-c", StdlibScript)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("pyscan: list stdlib of %s: %w: %s", python, err, strings.TrimSpace(stderr.String()))
	}
	names, err := ParseStdlib(out)
	if err != nil {
		return nil, fmt.Errorf("pyscan: list stdlib of %s: %w", python, err)
	}
	return NewSet(names...), nil
}

// ParseStdlib reads what StdlibScript printed: module names, one a line,
// returned sorted. It rejects output that cannot be a real interpreter's
// (too few names, or something that is not a module name).
func ParseStdlib(out []byte) ([]string, error) {
	names := strings.Fields(string(out))
	if len(names) < 50 {
		// Every real interpreter has hundreds; fewer means something else answered.
		return nil, fmt.Errorf("only %d names", len(names))
	}
	for _, n := range names {
		if !moduleNameRe.MatchString(n) {
			return nil, fmt.Errorf("unexpected output %q", prefix(n, 80))
		}
	}
	sort.Strings(names)
	return names, nil
}

func prefix(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
