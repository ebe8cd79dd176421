"""Generates humaneval_wrong.json, the fake model's plausible-but-wrong
HumanEval answers (go test ./internal/fakellm -run TestHumanEvalWrongTable
-update runs it in the sandbox).

For each problem it looks for an off-by-one in the canonical solution (a
boundary or a constant one away, made by mutate.py on one line) that
HumanEval's own tests catch, and for weak tests that do not: some of the
problem's own checks, each a pytest test, that pass on the canonical and
on the wrong solution alike. A problem without both is left out, and the
fake model answers it correctly.

Reads problems.json (a list of HumanEval problems) and writes
.harness/wrong.json.
"""

import ast
import json
import re
import signal
import sys

sys.path.insert(0, ".harness")
import mutate  # noqa: E402

MAX_WEAK = 3
OFF_BY_ONE = re.compile(r"^-?\d+ -> -?\d+$")  # an int constant one away
CHECK_TIMEOUT = 2.0


class Timeout(BaseException):
    pass


def alarm(signum, frame):
    raise Timeout()


def checks_of(test_src):
    """The module statements of a HumanEval test besides check, check's
    parameter name, and its checks: each statement of check that asserts,
    with the statements before it that do not (its setup)."""
    tree = ast.parse(test_src)
    module = [s for s in tree.body if not (isinstance(s, ast.FunctionDef) and s.name == "check")]
    check = next(s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "check")
    param = check.args.args[0].arg
    setup, groups = [], []
    for st in check.body:
        if any(isinstance(n, ast.Assert) for n in ast.walk(st)):
            groups.append((list(setup), st))
        else:
            setup.append(st)
    return module, param, groups


def test_function(name, param, entry, setup, st):
    fn = ast.FunctionDef(
        name=name,
        args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[ast.parse("%s = %s" % (param, entry)).body[0]] + setup + [st],
        decorator_list=[],
        returns=None,
    )
    return ast.unparse(ast.fix_missing_locations(ast.Module(body=[fn], type_ignores=[])))


def passes(solution_src, module_src, fn_src, name):
    ns = {"__name__": "solution"}
    signal.setitimer(signal.ITIMER_REAL, CHECK_TIMEOUT)
    try:
        exec(compile(solution_src, "solution.py", "exec"), ns)
        tns = {k: v for k, v in ns.items() if not k.startswith("__")}
        tns["__name__"] = "test_solution"
        exec(compile(module_src + "\n" + fn_src, "test_solution.py", "exec"), tns)
        tns[name]()
        return True
    except Timeout:
        return False
    except BaseException:
        return False
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def one_line(a, b):
    la, lb = a.splitlines(), b.splitlines()
    if len(la) != len(lb):
        return None
    diff = [i for i, (x, y) in enumerate(zip(la, lb)) if x != y]
    return diff[0] if len(diff) == 1 else None


def variant(p):
    canonical = p["prompt"] + p["canonical_solution"]
    module, param, groups = checks_of(p["test"])
    module_src = ast.unparse(ast.Module(body=module, type_ignores=[]))
    tests = []
    for i, (setup, st) in enumerate(groups):
        name = "test_example_%d" % (i + 1)
        src = test_function(name, param, p["entry_point"], setup, st)
        if passes(canonical, module_src, src, name):
            tests.append((name, src))
    if not tests:
        return None
    _, mutants = mutate.mutants_of(canonical, 1, 100000)
    mutants = [m for m in mutants if m.point.operator == "boundary" or OFF_BY_ONE.match(m.point.description)]
    mutants.sort(key=lambda m: (m.point.operator != "boundary", m.id))
    for m in mutants:
        line = one_line(canonical, m.source)
        if line is None:
            continue
        ok = [(n, s) for n, s in tests if passes(m.source, module_src, s, n)]
        if len(ok) == len(tests) or not ok:
            continue  # the problem's tests do not catch it, or every test does
        weak = ok[:MAX_WEAK]
        head = "from solution import *\nfrom solution import %s\n" % p["entry_point"]
        if module_src.strip():
            head += "\n" + module_src + "\n"
        return {
            "task_id": p["task_id"],
            "line": line + 1,
            "from": canonical.splitlines()[line],
            "to": m.source.splitlines()[line],
            "description": m.point.description,
            "weak_tests": head + "\n\n" + "\n\n\n".join(s for _, s in weak) + "\n",
        }
    return None


def main():
    signal.signal(signal.SIGALRM, alarm)
    with open("problems.json") as f:
        problems = json.load(f)
    out = []
    for p in problems:
        try:
            v = variant(p)
        except Exception as e:  # a problem the generator cannot read: answered correctly
            print("%s: %s" % (p["task_id"], e), file=sys.stderr)
            v = None
        if v:
            out.append(v)
    with open(".harness/wrong.json", "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
