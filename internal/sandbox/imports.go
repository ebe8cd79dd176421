package sandbox

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/autocoder/autocoder/pkg/messages"
)

// importCheck lists, as JSON on stdout, the top-level modules solution.py
// imports that the interpreter cannot find (importlib.util.find_spec, which
// imports nothing). Imports guarded by a try whose handlers catch
// ImportError are optional and left out, as are relative imports; a file
// that does not parse lists nothing (the run will show the syntax error).
const importCheck = `import ast, importlib.util, json, sys
def guarded(node, parents):
    for p in parents:
        if isinstance(p, ast.Try) and node_in(node, p.body):
            for h in p.handlers:
                names = [] if h.type is None else [n.id for n in ast.walk(h.type) if isinstance(n, ast.Name)]
                if h.type is None or {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"} & set(names):
                    return True
    return False
def node_in(node, body):
    return any(node is n for b in body for n in ast.walk(b))
try:
    tree = ast.parse(open("solution.py", encoding="utf-8").read())
except (SyntaxError, ValueError):
    print("[]")
    sys.exit(0)
parents = [n for n in ast.walk(tree) if isinstance(n, ast.Try)]
names = []
for node in ast.walk(tree):
    if isinstance(node, ast.Import):
        mods = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        mods = [node.module]
    else:
        continue
    if guarded(node, parents):
        continue
    for m in mods:
        top = m.split(".")[0]
        if top not in names and top != "solution":
            names.append(top)
missing = []
for top in names:
    try:
        found = importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        missing.append(top)
print(json.dumps(missing))
`

// MaxMissingModules bounds what CheckImports reports.
const MaxMissingModules = 20

// ImportCheckTimeout is how long the import check may take at most.
const ImportCheckTimeout = 60 * time.Second

// CheckImports runs the import check of code (solution.py) in a sandbox
// and returns the top-level modules it imports that the environment cannot
// find, sorted as they appear. frame is the run's environment, job and
// limits (the worker's ceilings: the check is a run like any other); a
// zero Timeout is ImportCheckTimeout. An error means the check could not run.
func CheckImports(ctx context.Context, b Backend, frame RunSpec, code string) ([]string, error) {
	spec := RunSpec{Env: frame.Env, JobID: frame.JobID, Timeout: cmp.Or(frame.Timeout, ImportCheckTimeout),
		Memory: frame.Memory, CPUs: frame.CPUs, OutputLimit: 64 << 10,
		Files: map[string][]byte{SolutionFile: []byte(code), ".harness/check_imports.py": []byte(importCheck)},
		Argv:  []string{"python", "-I", ".harness/check_imports.py"},
	}
	res, err := b.Run(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("import check in %s sandbox: %w", b.Name(), err)
	}
	var missing []string
	if res.ExitCode != 0 || json.Unmarshal(res.Stdout, &missing) != nil {
		return nil, fmt.Errorf("import check in %s sandbox: exit %d: %s", b.Name(), res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	if len(missing) > MaxMissingModules {
		missing = missing[:MaxMissingModules]
	}
	return missing, nil
}

// MissingModulesProblem is the acceptance problem of missing modules: an
// environment diagnosis naming each module and the package to add.
func MissingModulesProblem(mods []messages.MissingModule) string {
	parts := make([]string, len(mods))
	for i, m := range mods {
		parts[i] = fmt.Sprintf("%s (package %s)", m.Module, m.Package)
	}
	return fmt.Sprintf("environment: %s imports modules its sandbox does not have: %s; the script did not run",
		SolutionFile, strings.Join(parts, ", "))
}
