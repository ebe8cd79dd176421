package pyscan

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// stdlibScript prints the interpreter's standard library module names, one a
// line. Interpreters older than 3.10 lack sys.stdlib_module_names; for them it
// lists the builtin modules and what is installed in the stdlib directory.
const stdlibScript = `import sys
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
	// -I: isolated mode, so no user site or PYTHON* variables change the answer.
	cmd := exec.CommandContext(ctx, python, "-I", "-c", stdlibScript)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("pyscan: list stdlib of %s: %w: %s", python, err, strings.TrimSpace(stderr.String()))
	}
	names := strings.Fields(string(out))
	if len(names) < 50 {
		// Every real interpreter has hundreds; fewer means something else answered.
		return nil, fmt.Errorf("pyscan: list stdlib of %s: only %d names", python, len(names))
	}
	for _, n := range names {
		if !moduleNameRe.MatchString(n) {
			return nil, fmt.Errorf("pyscan: list stdlib of %s: unexpected output %q", python, n)
		}
	}
	return NewSet(names...), nil
}
