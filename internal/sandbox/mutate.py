"""autocoder's mutation tester: how strong are the tests of solution.py?

Runs inside the sandbox, in /workspace, beside solution.py and
test_solution.py. It makes small faults in solution.py (mutants) over
Python's own ast, runs the tests against each, and writes a JSON report:
a mutant the tests fail is killed, one they pass survived. A survivor that
gives the same results as solution.py on every call the tests made, and on
small perturbations of those calls (an int one higher or lower, a list one
element shorter...), is counted as equivalent when at least one of the perturbed
calls ran the mutated line and returned normally: no test built from those
inputs could tell it apart, and it is likely the same function. Agreement
on the tests' own calls alone, on calls that never reach the change, or
that all raise, is no evidence: it is what weak tests look like; nor is
agreement about an entry of a data table (a constant in a list, tuple, set
or dict display), which a call may run past without using. For a mutation
of a comparison or an and/or (or of an operand of a comparison), "ran the
mutated line" is not enough: the comparison must have come out otherwise
in the mutant on that call.

Every test run (the unmutated tests', twice, and each mutant's) starts from
a fresh copy of the workspace as it was before the first, with its own
empty TMPDIR, and what it leaves running is killed: no run sees another's
leftovers. Tests that pass once but not a second time are an error.

The report goes to a file named for the run (--out-name-file: a file that
holds the name, read and removed before any test runs); whatever is there
is removed first, and a report that cannot be written is a non-zero exit.

Bounded: at most --max-mutants mutants (a seeded sample of every mutation
point when there are more), --budget seconds in all (mutants not started by
then are reported as not run), and a per-mutant limit derived from the
run of the unmutated tests: CPU time, so that a busy machine does not pass
for a mutant that loops, and wall time for one that blocks (a mutant that
hangs is killed, and counts as killed, as mutmut and cosmic-ray count it).
Each test run is a forked child of this process, in its own process group,
killed whole at
its deadline.

The `if __name__ == "__main__":` block is not mutated: the tests import
the module, and the acceptance run checks the script's main block.
Docstrings, annotations and types (Literal[...], type aliases), f-strings
and string constants are not mutated either: their mutants say little about
the tests.

Usage: python mutate.py [--seed N] [--max-mutants N] [--budget SECONDS]
       [--max-survivors N] [--out PATH | --out-name-file PATH] [--list]
"""

import argparse
import ast
import contextlib
import copy
import difflib
import inspect
import io
import json
import math
import os
import pickle
import random
import re
import shutil
import signal
import stat
import sys
import tempfile
import time

SOLUTION = "solution.py"
TESTS = "test_solution.py"
HARNESS = ".harness"
VERSION = 1

MAX_CALLS = 200  # distinct calls recorded from the tests
MAX_NEIGHBOURS = 12  # perturbed calls per recorded call
CALL_TIMEOUT = 1.0  # CPU seconds for one replayed call
MAX_CALL_TIMEOUTS = 2  # replayed calls that time out before a comparison gives up
COMPARE_TIMEOUT = 15.0  # seconds for one mutant's comparison
DIFF_LIMIT = 2000  # characters of one survivor's diff
REPR_LIMIT = 200  # characters of one value in a witness


# ---------------------------------------------------------------- mutants


class Point:
    """One mutation: replace source bytes [start, end) with text. in_data
    marks a constant inside a list, tuple, set or dict display: a table
    entry, which a call may run past without using, so agreement on calls
    is no evidence that its mutant is equivalent."""

    def __init__(self, operator, line, description, start, end, text, in_data=False, probe=None):
        self.operator = operator
        self.line = line
        self.description = description
        self.start = start
        self.end = end
        self.text = text
        self.in_data = in_data
        # probe: the source span [start, end) of the expression whose value
        # tells whether the mutation changed anything at a call (a
        # comparison, an and/or), or None (then only whether its line ran).
        self.probe = probe

    def mutant_probe(self):
        """probe, in the mutant's source."""
        if self.probe is None:
            return None
        return self.probe[0], self.probe[1] + len(self.text.encode("utf-8")) - (self.end - self.start)


BINOPS = {
    ast.Add: (ast.Sub, "+", "-"),
    ast.Sub: (ast.Add, "-", "+"),
    ast.Mult: (ast.Div, "*", "/"),
    ast.Div: (ast.Mult, "/", "*"),
    ast.FloorDiv: (ast.Div, "//", "/"),
    ast.Mod: (ast.FloorDiv, "%", "//"),
    ast.Pow: (ast.Mult, "**", "*"),
    ast.LShift: (ast.RShift, "<<", ">>"),
    ast.RShift: (ast.LShift, ">>", "<<"),
    ast.BitAnd: (ast.BitOr, "&", "|"),
    ast.BitOr: (ast.BitAnd, "|", "&"),
    ast.BitXor: (ast.BitAnd, "^", "&"),
}

# comparison -> (category, source token pattern, replacement)
COMPARES = {
    ast.Lt: ("boundary", r"<(?!=|<)", "<="),
    ast.LtE: ("boundary", r"<=", "<"),
    ast.Gt: ("boundary", r"(?<![-=>])>(?!=|>)", ">="),
    ast.GtE: ("boundary", r">=", ">"),
    ast.Eq: ("comparison", r"==", "!="),
    ast.NotEq: ("comparison", r"!=", "=="),
    ast.In: ("comparison", r"\bin\b", "not in"),
    ast.NotIn: ("comparison", r"\bnot\s+in\b", "in"),
    ast.Is: ("comparison", r"\bis\b(?!\s+not\b)", "is not"),
    ast.IsNot: ("comparison", r"\bis\s+not\b", "is"),
}

ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant)


class Source:
    """The source as UTF-8 bytes, with ast positions turned into offsets."""

    def __init__(self, text):
        self.text = text
        self.data = text.encode("utf-8")
        self.starts = [0]
        for i, b in enumerate(self.data):
            if b == 0x0A:
                self.starts.append(i + 1)

    def offset(self, line, col):
        return self.starts[line - 1] + col

    def span(self, node):
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)

    def segment(self, node):
        a, b = self.span(node)
        return self.data[a:b].decode("utf-8")

    def find(self, start, end, pattern):
        """The first match of pattern in [start, end), outside comments."""
        gap = self.data[start:end].decode("utf-8")
        code = re.sub(r"#[^\n]*", lambda m: " " * len(m.group(0)), gap)
        m = re.search(pattern, code)
        if not m:
            return None
        a = start + len(code[: m.start()].encode("utf-8"))
        return a, a + len(m.group(0).encode("utf-8"))


TYPING_FORMS = {"Literal", "Annotated"}


def is_type_alias(expr):
    """Whether an assigned value is a typing construct (Literal[...],
    Optional[...], Union[...]) rather than a value the code computes with."""
    if not isinstance(expr, ast.Subscript):
        return False
    v = expr.value
    if isinstance(v, ast.Attribute) and isinstance(v.value, ast.Name) and v.value.id in ("typing", "t", "typing_extensions"):
        return True
    return isinstance(v, ast.Name) and v.id in TYPING_FORMS | {"Union", "Optional"}


def is_main_guard(node):
    t = node.test
    return (
        isinstance(t, ast.Compare)
        and isinstance(t.left, ast.Name)
        and t.left.id == "__name__"
        and len(t.ops) == 1
        and isinstance(t.ops[0], ast.Eq)
        and isinstance(t.comparators[0], ast.Constant)
        and t.comparators[0].value == "__main__"
    )


class Finder(ast.NodeVisitor):
    """Collects the mutation points of a module, in source order."""

    def __init__(self, src, parents=None):
        self.src = src
        self.points = []
        self.displays = 0  # depth of list, tuple, set and dict displays
        self.parents = parents or {}

    def add(self, operator, node, description, start, end, text):
        line = self.src.data.count(b"\n", 0, start) + 1  # where the change is, not where its node starts
        in_data = operator == "constant" and self.displays > 0
        probe = self.probe_of(node)
        self.points.append(Point(operator, line, description, start, end, text, in_data, probe and self.src.span(probe)))

    def probe_of(self, node):
        """The comparison or and/or whose value a mutation of node changes
        or not: node itself, or the comparison node is an operand of (through
        arithmetic only); None for any other node."""
        n = node
        while isinstance(n, (ast.Constant, ast.UnaryOp, ast.BinOp)):
            n = self.parents.get(n)
        if isinstance(n, (ast.Compare, ast.BoolOp)) and (n is node or isinstance(node, (ast.Constant, ast.UnaryOp, ast.BinOp))):
            return n
        return None

    def visit_display(self, node):
        self.displays += 1
        self.generic_visit(node)
        self.displays -= 1

    visit_List = visit_Tuple = visit_Set = visit_Dict = visit_display

    # -- what is not mutated
    def visit_If(self, node):
        if is_main_guard(node):
            for n in node.orelse:
                self.visit(n)
            return
        self.generic_visit(node)

    def visit_JoinedStr(self, node):
        return

    def visit_AnnAssign(self, node):
        a = node.annotation
        if (isinstance(a, ast.Name) and a.id == "TypeAlias") or (isinstance(a, ast.Attribute) and a.attr == "TypeAlias"):
            return  # X: TypeAlias = ...
        if node.value is not None:
            self.visit(node.value)

    def visit_arg(self, node):
        return  # annotations

    def visit_Subscript(self, node):
        v = node.value
        name = v.id if isinstance(v, ast.Name) else v.attr if isinstance(v, ast.Attribute) else None
        if name in TYPING_FORMS:
            return  # a type: Literal[1, 2], Annotated[int, 3]
        self.generic_visit(node)

    def visit_TypeAlias(self, node):
        return  # type X = ... (Python 3.12)

    def visit_Assign(self, node):
        if is_type_alias(node.value):
            return  # X = Literal[...] / Union[...]: a type alias
        self.generic_visit(node)

    def body(self, node):
        stmts = node.body
        if stmts and isinstance(stmts[0], ast.Expr) and isinstance(stmts[0].value, ast.Constant) and isinstance(stmts[0].value.value, str):
            stmts = stmts[1:]  # the docstring
        for s in stmts:
            self.visit(s)

    def visit_Module(self, node):
        self.body(node)

    def visit_FunctionDef(self, node):
        for d in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.visit(d)
        self.body(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self.body(node)

    # -- operators
    def visit_BinOp(self, node):
        self.generic_visit(node)
        swap = BINOPS.get(type(node.op))
        if not swap:
            return
        _, old, new = swap
        at = self.src.find(self.src.span(node.left)[1], self.src.span(node.right)[0], re.escape(old) + r"(?![*/=<>])")
        if at:
            self.add("arithmetic", node, "%s -> %s" % (old, new), at[0], at[1], new)

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        swap = BINOPS.get(type(node.op))
        if not swap:
            return
        _, old, new = swap
        at = self.src.find(self.src.span(node.target)[1], self.src.span(node.value)[0], re.escape(old + "="))
        if at:
            self.add("arithmetic", node, "%s= -> %s=" % (old, new), at[0], at[1], new + "=")

    def visit_Compare(self, node):
        self.generic_visit(node)
        left = node.left
        for op, right in zip(node.ops, node.comparators):
            rule = COMPARES.get(type(op))
            if rule:
                category, pattern, new = rule
                at = self.src.find(self.src.span(left)[1], self.src.span(right)[0], pattern)
                if at:
                    old = self.src.data[at[0] : at[1]].decode("utf-8")
                    self.add(category, node, "%s -> %s" % (old, new), at[0], at[1], new)
            left = right

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        old, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        # One mutant per operator: `a and b and c` has two.
        for a, b in zip(node.values, node.values[1:]):
            at = self.src.find(self.src.span(a)[1], self.src.span(b)[0], r"\b%s\b" % old)
            if at:
                self.add("boolean", node, "%s -> %s" % (old, new), at[0], at[1], new)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, (ast.Not, ast.USub, ast.Invert)):
            start, _ = self.src.span(node)
            op_end, _ = self.src.span(node.operand)
            old = self.src.data[start:op_end].decode("utf-8").strip()
            category = "boolean" if isinstance(node.op, ast.Not) else "arithmetic"
            self.add(category, node, "drop %s" % old, start, op_end, "")

    def visit_Constant(self, node):
        v = node.value
        start, end = self.src.span(node)
        if isinstance(v, bool):
            self.add("constant", node, "%r -> %r" % (v, not v), start, end, repr(not v))
        elif isinstance(v, int):
            for n in sorted({v + 1, v - 1}):
                self.add("constant", node, "%d -> %d" % (v, n), start, end, "(%d)" % n if n < 0 else str(n))
        elif isinstance(v, float) and math.isfinite(v):
            self.add("constant", node, "%r -> %r" % (v, v + 1), start, end, repr(v + 1))

    def visit_Return(self, node):
        self.generic_visit(node)
        if node.value is None or (isinstance(node.value, ast.Constant) and node.value.value is None):
            return
        start, end = self.src.span(node.value)
        self.add("return", node, "return %s -> return None" % short(self.src.segment(node.value)), start, end, "None")

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "range" and node.args and not node.keywords:
            self.bound(node.args[-1], "range end")

    def visit_Slice(self, node):
        self.generic_visit(node)
        for b in (node.lower, node.upper):
            if b is not None:
                self.bound(b, "slice bound")

    def bound(self, expr, what):
        """+1 and -1 on an expression (constants get theirs from visit_Constant)."""
        if isinstance(expr, ast.Constant) or (isinstance(expr, ast.UnaryOp) and isinstance(expr.operand, ast.Constant)):
            return
        start, end = self.src.span(expr)
        seg = self.src.segment(expr)
        if not isinstance(expr, ATOMS):
            seg = "(%s)" % seg
        for d in ("+ 1", "- 1"):
            self.add("boundary", expr, "%s %s -> %s %s" % (what, short(self.src.segment(expr)), short(seg), d), start, end, "%s %s" % (seg, d))


def short(s, n=40):
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 3] + "..."


class Mutant:
    def __init__(self, ident, point, source):
        self.id = ident
        self.point = point
        self.source = source
        self.status = "not_run"
        self.witness = None


def mutants_of(text, seed, limit):
    """The mutants of text: every point, or a seeded sample of limit of them."""
    src = Source(text)
    tree = ast.parse(text)
    base = ast.dump(tree)
    parents = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    finder = Finder(src, parents)
    finder.visit(tree)
    seen = {base}
    out = []
    for p in finder.points:
        data = src.data[: p.start] + p.text.encode("utf-8") + src.data[p.end :]
        try:
            body = data.decode("utf-8")
            dump = ast.dump(ast.parse(body))
            compile(body, SOLUTION, "exec")
        except (SyntaxError, ValueError, UnicodeDecodeError):
            continue  # a point the token search got wrong: never a broken mutant
        if dump in seen:
            continue
        seen.add(dump)
        out.append((p, body))
    points = len(out)
    if len(out) > limit:
        keep = sorted(random.Random(seed).sample(range(len(out)), limit))
        out = [out[i] for i in keep]
    return points, [Mutant(i + 1, p, body) for i, (p, body) in enumerate(out)]


def unified(a, b):
    d = "".join(difflib.unified_diff(a.splitlines(True), b.splitlines(True), "a/" + SOLUTION, "b/" + SOLUTION, n=1))
    return d if len(d) <= DIFF_LIMIT else d[:DIFF_LIMIT] + "\n... (diff cut)\n"


# ---------------------------------------------------------------- children


def cpu_seconds(pid):
    """The CPU time (user and system) a process has used, from /proc; None
    when /proc cannot tell."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            data = f.read()
        fields = data[data.rindex(")") + 2 :].split()  # from the state on: utime and stime are 12th and 13th
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    except (OSError, ValueError, IndexError):
        return None


CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def run_child(fn, timeout, cpu_limit=None):
    """Runs fn in a forked child in its own process group; returns (exit
    code or None when it was killed at a limit, its wall seconds, its CPU
    seconds). It is killed, with its group, after timeout seconds of wall
    time or cpu_limit seconds of CPU time: CPU time is what tells a mutant
    that loops from one that is slow because the machine is busy."""
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            os.setpgid(0, 0)
            code = fn()
        except BaseException:
            code = 70
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except BaseException:
                pass
            os._exit(code if isinstance(code, int) else 70)
    deadline = start + timeout
    pause = 0.002
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            kill_descendants()  # what the run left running (a server, a daemon) ends with it
            return os.waitstatus_to_exitcode(status), time.monotonic() - start, usage.ru_utime + usage.ru_stime
        cpu = cpu_seconds(pid) if cpu_limit is not None else None
        if time.monotonic() >= deadline or (cpu is not None and cpu >= cpu_limit):
            for target in (-pid, pid):
                try:
                    os.kill(target, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            _, _, usage = os.wait4(pid, 0)
            kill_descendants()
            return None, time.monotonic() - start, usage.ru_utime + usage.ru_stime
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def become_subreaper():
    """Makes this process the parent of its orphaned descendants (Linux's
    PR_SET_CHILD_SUBREAPER), so that a process a test run leaves behind,
    even one that left its process group, can be found and killed."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)
    except Exception:
        pass


def children_of(ppid):
    out = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                data = f.read()
            if int(data[data.rindex(")") + 2 :].split()[1]) == ppid:
                out.append(int(name))
        except (OSError, ValueError, IndexError):
            continue
    return out


def kill_descendants():
    """Kills and reaps every process left under this one: nothing a test
    run started outlives it, to touch the next run or the report."""
    me = os.getpid()
    for _ in range(50):
        kids = children_of(me)
        if not kids:
            return
        for pid in kids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for pid in kids:
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)


def quiet(path=os.devnull):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def pytest_args():
    return [TESTS, "-q", "-x", "-p", "no:cacheprovider", "-o", "addopts=", "--rootdir=" + os.getcwd(), "--color=no", "--tb=line"]


def run_tests(log=os.devnull, record=None):
    quiet(log)
    import pytest

    plugins = [record_calls(record)] if record is not None else []
    return int(pytest.main(pytest_args(), plugins=plugins))


# ---------------------------------------------------------------- calls


class Recorder:
    """Wraps solution's module-level functions and keeps the calls the tests
    make to them (not the calls they make to each other). As a pytest plugin
    it saves them when the session ends."""

    def __init__(self, path):
        self.path = path
        self.calls = []
        self.keys = set()
        self.depth = 0

    def wrap(self, name, fn):
        import functools

        rec = self

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if rec.depth == 0 and len(rec.calls) < MAX_CALLS:
                try:
                    blob = pickle.dumps((name, args, kwargs), protocol=4)
                    if blob not in rec.keys:
                        rec.keys.add(blob)
                        rec.calls.append(blob)
                except Exception:
                    pass  # an argument that does not pickle: the call is not replayed
            rec.depth += 1
            try:
                return fn(*args, **kwargs)
            finally:
                rec.depth -= 1

        return wrapper

    def pytest_sessionfinish(self):
        with open(self.path, "wb") as f:
            pickle.dump(self.calls, f)


def record_calls(path):
    """Wraps solution's functions before the tests import them."""
    import inspect

    import solution

    rec = Recorder(path)
    for name, fn in list(vars(solution).items()):
        if inspect.isfunction(fn) and fn.__module__ == "solution" and not name.startswith("__"):
            setattr(solution, name, rec.wrap(name, fn))
    return rec


class CallTimeout(BaseException):
    pass


MUTANT_FILE = "<mutant>"


def load(name, text, filename=SOLUTION, probe=None):
    import types

    mod = types.ModuleType(name)
    mod.__file__ = os.path.join(os.getcwd(), SOLUTION)
    if probe is not None:
        setattr(mod, PROBE_NAME, probe)
    sys.modules[name] = mod
    exec(compile(text, filename, "exec"), mod.__dict__)
    return mod


class LineProbe:
    """Tells whether a line of the mutant ran during a call."""

    def __init__(self, line):
        self.line = line
        self.hit = False

    def __call__(self, frame, event, arg):
        if frame.f_code.co_filename != MUTANT_FILE:
            return None
        return self.local

    def local(self, frame, event, arg):
        if event == "line" and frame.f_lineno == self.line:
            self.hit = True
        return self.local


def neighbours(args, kwargs):
    """Small perturbations of a call, one argument at a time."""
    out = []
    names = [(i, None) for i in range(len(args))] + [(None, k) for k in kwargs]
    for i, k in names:
        v = args[i] if k is None else kwargs[k]
        for w in perturb(v):
            a, kw = list(args), dict(kwargs)
            if k is None:
                a[i] = w
            else:
                kw[k] = w
            out.append((tuple(a), kw))
            if len(out) >= MAX_NEIGHBOURS:
                return out
    return out


def perturb(v):
    if isinstance(v, bool):
        return [not v]
    if isinstance(v, int):
        return [v + 1, v - 1] + ([0] if v not in (0, 1, -1) else [])
    if isinstance(v, float):
        return [v + 1, v - 1, 0.0]
    if isinstance(v, str):
        words = v.split(" ")
        return [w for w in (v[:-1], v + v[-1:], " ".join(reversed(words)), v + " " + v, "") if w != v]
    if isinstance(v, (list, tuple)):
        t = type(v)
        out = [t(v[:-1]), t(list(v) + list(v[-1:])), t(reversed(v)), t(list(v) + list(v))] if v else []
        if v and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            out.append(t(x + 1 for x in v))
        if v:
            out.append(t())
        return [w for w in out if w != v]
    return []


def outcome(mod, name, args, kwargs, probe=None):
    """What one call does: its value, its arguments after, what it printed;
    or the exception it raised. probe, if any, traces the call."""
    fn = getattr(mod, name, None)
    if fn is None:
        return ("missing",)
    args, kwargs = copy.deepcopy(args), copy.deepcopy(kwargs)
    buf = io.StringIO()
    signal.setitimer(signal.ITIMER_PROF, CALL_TIMEOUT)
    try:
        with contextlib.redirect_stdout(buf):
            sys.settrace(probe)
            try:
                value = fn(*args, **kwargs)
            finally:
                sys.settrace(None)
        return ("value", value, args, kwargs, buf.getvalue())
    except CallTimeout:
        return ("timeout",)
    except RecursionError:
        return ("raise", "RecursionError")
    except Exception as e:
        return ("raise", type(e).__name__)
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)


def same(a, b):
    """Whether two outcomes agree: True, False, or None when it cannot be
    told (a call timed out, a value that compares by identity)."""
    if a[0] == "timeout" or b[0] == "timeout":
        return None  # cannot tell
    if a[0] != b[0]:
        return False
    if a[0] != "value":
        return a == b
    verdict = True
    for x, y in zip(a[1:], b[1:]):
        e = equal(x, y)
        if e is False:
            return False
        if e is None:
            verdict = None
    return verdict


OWN_MODULES = ("solution", "solution_mutant")
MAX_EQUAL_DEPTH = 50


def own(t):
    """Whether a class is defined by solution.py (the original module's or
    the mutant's copy of it)."""
    return getattr(t, "__module__", None) in OWN_MODULES


def equal(x, y, depth=0):
    """Whether two values agree: True, False, or None when it cannot be told.
    The original and the mutant are two modules, each with its own classes:
    instances of the classes solution.py defines are compared by qualified
    name, then by value. Generators, coroutines and other values that only
    compare by identity are undecided: two of them always differ."""
    if depth > MAX_EQUAL_DEPTH:
        return None
    tx, ty = type(x), type(y)
    if tx is not ty:
        if own(tx) and own(ty) and tx.__qualname__ == ty.__qualname__:
            return equal_own(x, y, depth)
        return False
    if x is y:
        return True
    if isinstance(x, float) and math.isnan(x) and math.isnan(y):
        return True
    if inspect.isgenerator(x) or inspect.iscoroutine(x) or inspect.isasyncgen(x):
        return None
    if tx in (list, tuple):
        if len(x) != len(y):
            return False
        return all_equal(zip(x, y), depth)
    if tx is dict:
        if len(x) != len(y) or any(k not in y for k in x):
            return False if not any(own(type(k)) for k in x) else None
        return all_equal(((x[k], y[k]) for k in x), depth)
    if own(tx):
        return equal_own(x, y, depth)
    if getattr(tx, "__eq__", None) is object.__eq__:
        return None  # compares by identity: a fresh object on each side always differs
    try:
        if hasattr(x, "equals") and callable(x.equals):  # pandas
            return bool(x.equals(y))
        r = x == y
        if isinstance(r, bool):
            return r
        if hasattr(r, "all"):  # numpy
            return bool(r.all())
        return bool(r)
    except Exception:
        pass
    try:
        return pickle.dumps(x) == pickle.dumps(y)
    except Exception:
        return repr(x) == repr(y)


def all_equal(pairs, depth):
    verdict = True
    for a, b in pairs:
        e = equal(a, b, depth + 1)
        if e is False:
            return False
        if e is None:
            verdict = None
    return verdict


def equal_own(x, y, depth):
    """Two instances of a class of solution.py (one class of that name in
    each module, or the same): an enum by name and value, a tuple (a
    namedtuple) by its items, any other by its attributes, or by repr."""
    import enum

    if isinstance(x, enum.Enum):
        if not isinstance(y, enum.Enum) or x.name != y.name:
            return False
        return equal(x.value, y.value, depth + 1)
    if isinstance(x, tuple):
        if not isinstance(y, tuple) or len(x) != len(y):
            return False
        return all_equal(zip(x, y), depth)
    if isinstance(x, BaseException):
        return type(x).__qualname__ == type(y).__qualname__ and equal(list(x.args), list(y.args), depth + 1)
    fields = state_of(x), state_of(y)
    if fields[0] is not None and fields[1] is not None:
        a, b = fields
        if sorted(a) != sorted(b):
            return False
        r = all_equal(((a[k], b[k]) for k in a), depth)
        if r is not None or type(x) is type(y):
            return r
    try:
        rx, ry = repr(x), repr(y)
    except Exception:
        return None
    if " at 0x" in rx or " at 0x" in ry:
        return None  # the default repr: an address
    return rx == ry


def state_of(v):
    """An object's attributes (__dict__ and __slots__), or None."""
    out = {}
    d = getattr(v, "__dict__", None)
    if isinstance(d, dict):
        out.update(d)
    for cls in type(v).__mro__:
        for name in getattr(cls, "__slots__", ()) if not isinstance(getattr(cls, "__slots__", ()), str) else (cls.__slots__,):
            if name not in ("__dict__", "__weakref__") and hasattr(v, name):
                out[name] = getattr(v, name)
    if not out and d is None:
        return None
    return out


def show(v):
    try:
        s = repr(v)
    except Exception:
        s = "<%s>" % type(v).__name__
    return s if len(s) <= REPR_LIMIT else s[: REPR_LIMIT - 3] + "..."


def call_text(name, args, kwargs):
    parts = [show(a) for a in args] + ["%s=%s" % (k, show(v)) for k, v in kwargs.items()]
    return "%s(%s)" % (name, ", ".join(parts))


def describe(o):
    if o[0] == "value":
        s = show(o[1])
        if o[4]:
            s += " (printed %s)" % show(o[4])
        return s
    if o[0] == "raise":
        return "raises " + o[1]
    return o[0]


PROBE_NAME = "__autocoder_probe__"
MAX_PROBED = 10000  # values one call's probe keeps


class ValueProbe:
    """Records the values of the probed expression (the comparison or
    and/or a mutation changes) during a call."""

    def __init__(self):
        self.values = []

    def __call__(self, v):
        if len(self.values) < MAX_PROBED:
            try:
                self.values.append(v if isinstance(v, bool) else ("other", repr(v)[:REPR_LIMIT]))
            except Exception:
                self.values.append(("other", type(v).__name__))
        return v


def instrument(text, span):
    """text with the expression at span wrapped in the probe, or None when
    that does not compile."""
    if span is None:
        return None
    data = text.encode("utf-8")
    a, b = span
    out = data[:a] + (PROBE_NAME + "(").encode() + data[a:b] + b")" + data[b:]
    try:
        body = out.decode("utf-8")
        compile(body, SOLUTION, "exec")
    except (SyntaxError, ValueError, UnicodeDecodeError):
        return None
    return body


def compare(original, mutant_text, line, calls_path, out_path, spans=None):
    """Child: replays the recorded calls, and their neighbours, on the
    original and the mutant; writes the first call they disagree on. A call
    is informative when it is a perturbation, the original returned and the
    mutation was exercised: the probed expression (the comparison or and/or
    it changes, spans in the original and the mutant) took a different
    value in the mutant than in the original, or, for a mutation without
    one, its line ran. Only agreement on informative calls is evidence of an
    equivalent mutant: agreement on calls where the comparison came out the
    same either way says nothing of the inputs where it does not."""
    quiet()

    def alarm(signum, frame):
        raise CallTimeout()

    signal.signal(signal.SIGPROF, alarm)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 3000))
    result = {"differs": False, "undecided": False, "checked": 0, "informative": 0}
    try:
        with open(calls_path, "rb") as f:
            blobs = pickle.load(f)
        probed = None
        if spans is not None:
            a, b = instrument(original, spans[0]), instrument(mutant_text, spans[1])
            if a is not None and b is not None:
                probed = ValueProbe(), ValueProbe()
                original, mutant_text = a, b
        orig = load("solution", original, probe=probed and probed[0])
        mut = load("solution_mutant", mutant_text, MUTANT_FILE, probe=probed and probed[1])
        calls = []
        for blob in blobs:
            try:
                calls.append(pickle.loads(blob))
            except Exception:
                continue
        work = [(name, a, kw, "test") for name, a, kw in calls]
        for name, a, kw in calls:
            work += [(name, na, nkw, "near") for na, nkw in neighbours(a, kw)]
        timeouts = 0
        for name, a, kw, kind in work:
            if probed:
                probed[0].values, probed[1].values = [], []
            x = outcome(orig, name, a, kw)
            probe = LineProbe(line)
            y = outcome(mut, name, a, kw, probe)
            s = same(x, y)
            result["checked"] += 1
            exercised = probed[0].values != probed[1].values if probed else probe.hit
            if x[0] == "value" and exercised and kind == "near" and s:
                result["informative"] += 1
            if s is None:
                result["undecided"] = True
                if x[0] == "timeout" or y[0] == "timeout":
                    timeouts += 1
                    if timeouts >= MAX_CALL_TIMEOUTS:
                        break
                continue
            if not s:
                result.update(differs=True, witness=call_text(name, a, kw), original=describe(x), mutant=describe(y), near=kind == "near")
                break
    except BaseException as e:
        result = {"differs": False, "undecided": True, "error": type(e).__name__}
    with open(out_path, "w") as f:
        json.dump(result, f)
    return 0


# ---------------------------------------------------------------- main


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-mutants", type=int, default=40)
    ap.add_argument("--budget", type=float, default=90.0)
    ap.add_argument("--max-survivors", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(HARNESS, "mutation.json"))
    ap.add_argument(
        "--out-name-file",
        help="a file under .harness that holds the report's name (mutation-<hex>.json, in .harness): "
        "read and removed before any test runs, so that the tests cannot tell where the report goes",
    )
    ap.add_argument("--list", action="store_true", help="write the mutants (with their source) and run nothing")
    opt = ap.parse_args(argv)
    if opt.out_name_file:
        opt.out = secret_out(opt.out_name_file)
    become_subreaper()
    sys.dont_write_bytecode = True
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    os.makedirs(os.path.dirname(opt.out) or ".", exist_ok=True)
    remove_path(opt.out)  # whatever is there is not this run's report
    started = time.monotonic()
    report = {"version": VERSION, "seed": opt.seed}
    with open(SOLUTION, encoding="utf-8") as f:
        original = f.read()
    try:
        points, mutants = mutants_of(original, opt.seed, max(opt.max_mutants, 0))
    except SyntaxError as e:
        report.update(error="solution.py does not parse: %s (line %s)" % (e.msg, e.lineno))
        return write(opt.out, report, started)
    report.update(points=points, mutants=len(mutants))
    if opt.list:
        report["list"] = [{"id": m.id, "operator": m.point.operator, "line": m.point.line, "description": m.point.description, "source": m.source} for m in mutants]
        return write(opt.out, report, started)
    ws = Workspace(os.getcwd())  # as it is before any test runs
    try:
        run(opt, original, mutants, report, started, ws)
    except WorkspaceError as e:
        report.update(error="the tests leave a workspace that cannot be reset: %s" % e, killed=0, survived=0, equivalent=0, timed_out=0, not_run=len(mutants))
        report.pop("survivors", None)
        report.pop("by_operator", None)
        report.pop("partial", None)
    finally:
        with contextlib.suppress(Exception):
            ws.reset()
        ws.close()
    return write(opt.out, report, started)


OUT_NAME = re.compile(r"^mutation-[0-9a-f]{16,64}\.json$")


def secret_out(name_file):
    """The report's path, from name_file, which is then removed: the name
    is known to the caller that collects the report and to this process,
    and nowhere the tests look (argv, the environment, the workspace)."""
    with open(name_file, encoding="utf-8") as f:
        name = f.read().strip()
    os.remove(name_file)
    if not OUT_NAME.match(name):
        raise SystemExit("mutate.py: %s does not hold a report name (mutation-<hex>.json)" % name_file)
    return os.path.join(HARNESS, name)


class WorkspaceError(Exception):
    pass


def remove_path(path):
    """Removes a file, link or directory tree; a directory the tests made
    read-only is made writable first. Nothing there is not an error."""
    def retry(fn, p, _exc):
        parent = os.path.dirname(p)
        for q in (parent, p):
            with contextlib.suppress(OSError):
                os.chmod(q, os.stat(q).st_mode | stat.S_IRWXU)
        fn(p)

    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path, onerror=retry)
    else:
        os.remove(path)


class Workspace:
    """A copy of the workspace (all but .harness) as it was before the
    baseline: every test run, the baseline's and each mutant's, starts from
    it, so that no run sees what another left behind (a directory made, a
    file appended to), and each gets its own empty temporary directory."""

    def __init__(self, root):
        self.root = root
        self.template = tempfile.mkdtemp(prefix="autocoder-workspace-")
        for name in os.listdir(root):
            if name != HARNESS:
                copy_path(os.path.join(root, name), os.path.join(self.template, name))

    def reset(self, solution=None):
        """Makes the workspace the copy again, with solution as solution.py
        when given."""
        try:
            for name in os.listdir(self.root):
                if name != HARNESS:
                    remove_path(os.path.join(self.root, name))
            for name in os.listdir(self.template):
                copy_path(os.path.join(self.template, name), os.path.join(self.root, name))
            if solution is not None:
                with open(os.path.join(self.root, SOLUTION), "w", encoding="utf-8") as f:
                    f.write(solution)
        except OSError as e:
            raise WorkspaceError("%s: %s" % (type(e).__name__, e)) from e

    def run(self, solution, fn, timeout, cpu_limit=None):
        """run_child(fn, ...) in a fresh workspace with solution.py being
        solution, and a fresh TMPDIR."""
        self.reset(solution)
        tmp = tempfile.mkdtemp(prefix="autocoder-tmp-")

        def child():
            os.environ["TMPDIR"] = tmp
            tempfile.tempdir = None
            return fn()

        try:
            return run_child(child, timeout, cpu_limit)
        finally:
            with contextlib.suppress(OSError):
                remove_path(tmp)

    def close(self):
        with contextlib.suppress(OSError):
            remove_path(self.template)


def copy_path(src, dst):
    if os.path.islink(src):
        os.symlink(os.readlink(src), dst)
    elif os.path.isdir(src):
        shutil.copytree(src, dst, symlinks=True)
    else:
        shutil.copy2(src, dst)


def run(opt, original, mutants, report, started, ws):
    import pytest  # noqa: F401  (imported once here, so every forked run starts warm)

    calls = os.path.join(os.getcwd(), HARNESS, "calls.pkl")
    log = os.path.join(os.getcwd(), HARNESS, "baseline.log")
    budget_left = lambda: opt.budget - (time.monotonic() - started)

    def baseline(record):
        def child():
            return run_tests(log, calls if record else None)

        return ws.run(original, child, max(budget_left() / 2, 5))

    def failed(code):
        return "timed out" if code is None else "pytest exit code %d" % code

    code, took, cpu = baseline(True)
    if code != 0:  # perhaps the recording got in the way: once more without it
        with contextlib.suppress(OSError):
            os.remove(calls)
        code, took, cpu = baseline(False)
    if code != 0:
        report["error"] = "the tests do not pass on solution.py (%s): %s" % (failed(code), tail(log))
        report["not_run"] = len(mutants)
        return
    # Every mutant runs the tests again, in a fresh copy of the workspace:
    # tests that pass only once (on what a run before them left outside the
    # workspace, on the clock, on chance) would kill every mutant.
    again, took2, cpu2 = baseline(False)
    if again != 0:
        report["error"] = (
            "the tests pass on solution.py once but not when run again in a fresh copy of the workspace "
            "(%s), so a mutant's failure would say nothing: %s" % (failed(again), tail(log))
        )
        report["not_run"] = len(mutants)
        return
    took, cpu = max(took, took2), max(cpu, cpu2)
    have_calls = os.path.exists(calls)
    # A mutant may use four times the unmutated run's CPU time, plus half a
    # second; the wall-clock limit, twenty times the unmutated run's, only
    # catches one that blocks without computing.
    per_mutant_cpu = min(max(1.0, 4 * cpu + 0.5), 60.0)
    per_mutant = min(max(30.0, 20 * took), 120.0)
    report["mutant_timeout_ms"] = int(per_mutant_cpu * 1000)
    for m in mutants:
        if budget_left() < min(per_mutant_cpu, 1.5):
            break
        limit = min(per_mutant, max(budget_left(), 1))
        code, took, _ = ws.run(m.source, run_tests, limit, per_mutant_cpu)
        if code is None and limit < per_mutant and took >= limit:
            # The budget ended it, not the mutant's own limit: not judged
            # (a hang is one that outlives per_mutant), so not a kill.
            m.status = "not_run"
        else:
            m.status = "survived" if code == 0 else "timed_out" if code is None else "killed"
    ws.reset(original)
    for m in mutants:
        if m.status != "survived" or not have_calls or budget_left() < 2:
            continue
        out = os.path.join(HARNESS, "compare-%d.json" % m.id)
        spans = (m.point.probe, m.point.mutant_probe()) if m.point.probe else None
        run_child(lambda: compare(original, m.source, m.point.line, calls, out, spans), min(max(budget_left(), 1), COMPARE_TIMEOUT))
        try:
            with open(out) as f:
                c = json.load(f)
        except (OSError, ValueError):
            continue
        if c.get("differs"):
            m.witness = c
        elif not c.get("undecided") and c.get("informative", 0) > 0 and not m.point.in_data:
            m.status = "equivalent"
    summarize(original, mutants, report, opt.max_survivors)


def summarize(original, mutants, report, max_survivors):
    counts = {"killed": 0, "survived": 0, "equivalent": 0, "timed_out": 0, "not_run": 0}
    by_op = {}
    for m in mutants:
        counts[m.status] += 1
        op = by_op.setdefault(m.point.operator, {"mutants": 0, "killed": 0, "survived": 0, "equivalent": 0})
        op["mutants"] += 1
        if m.status in ("killed", "timed_out"):
            op["killed"] += 1
        elif m.status in ("survived", "equivalent"):
            op[m.status] += 1
    killed = counts["killed"] + counts["timed_out"]
    report.update(
        killed=killed,
        survived=counts["survived"],
        equivalent=counts["equivalent"],
        timed_out=counts["timed_out"],
        not_run=counts["not_run"],
        by_operator=by_op,
    )
    if counts["not_run"]:
        report["partial"] = True
    survivors = [m for m in mutants if m.status == "survived"]
    survivors.sort(key=lambda m: (m.witness is None, m.point.line, m.id))
    out = []
    for m in survivors[: max(max_survivors, 0)]:
        s = {"id": m.id, "operator": m.point.operator, "line": m.point.line, "description": m.point.description, "diff": unified(original, m.source)}
        if m.witness:
            s.update(witness=m.witness["witness"], original=m.witness["original"], mutant=m.witness["mutant"])
            if m.witness.get("near"):
                s["near"] = True
        out.append(s)
    report["survivors"] = out


def tail(path, n=600):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read().strip()
    except OSError:
        return "no output"
    return text if len(text) <= n else "..." + text[-n:]


def write(path, report, started):
    """Writes the report to a file this process creates: whatever the tests
    left at path is removed first, and a path that cannot be written is an
    error (a non-zero exit), never someone else's report."""
    report["duration_ms"] = int((time.monotonic() - started) * 1000)
    data = json.dumps(report).encode("utf-8")
    kill_descendants()
    remove_path(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
