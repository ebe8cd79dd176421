# The prelude of a code-mode program (internal/codemode/pyexec): it runs
# in the sandbox with the program, under the sandbox's limits. It checks
# the program (ast) before anything runs, defines each tool as a function
# whose call crosses the bridge to the worker (JSON lines: requests on the
# original stdout, answers on the original stdin, with ids so concurrent
# calls work), captures what the program prints, runs it, and reports the
# value of its last expression. The worker enforces every limit again: a
# program can write anything on the bridge, and nothing it writes there is
# trusted.
import ast
import builtins
import io
import json
import os
import sys
import threading

# concurrent.futures, asyncio and traceback are imported when needed: the
# interpreter's start is most of a short program's cost.

PROGRAM = "<program>"
RESULT = "__codemode_result__"

_proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
# Buffered: unbuffered, a line is read a byte at a time (a 1 MiB answer, a
# million reads). Only the reader thread reads it.
_proto_in = os.fdopen(os.dup(0), "rb", buffering=1 << 16)
# Tools answer this process only: a forked child (multiprocessing) would
# send calls whose answers come here, and wait for ever.
_PID = os.getpid()
# Whatever else writes on fd 1 (a C extension, a child process) goes to
# stderr, not into the bridge; fd 0 reads nothing.
os.dup2(2, 1)
_null = os.open(os.devnull, os.O_RDONLY)
os.dup2(_null, 0)
os.close(_null)

_wlock = threading.Lock()


def _send(msg):
    data = json.dumps(msg, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8", "replace") + b"\n"
    with _wlock:
        _proto_out.write(data)
    return len(data)


class ToolError(Exception):
    """A tool failed: message is what it said, tool its name."""

    def __init__(self, message, tool=None):
        super().__init__(message)
        self.message = message
        self.tool = tool

    def __str__(self):
        return self.message if self.tool is None else "%s: %s" % (self.tool, self.message)


class LimitExceeded(BaseException):
    """A limit of the run was reached (not an Exception: `except Exception` does not swallow it)."""


class _Printer(io.TextIOBase):
    """sys.stdout and sys.stderr: what the program prints goes to the worker, capped."""

    def __init__(self, limit):
        self._buf = []
        self._sent = 0
        self._limit = limit
        self._cut = False
        self._lock = threading.Lock()

    def writable(self):
        return True

    @property
    def encoding(self):
        return "utf-8"

    def isatty(self):
        return False

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        with self._lock:
            self._buf.append(s)
            if "\n" in s or sum(map(len, self._buf)) > 4096:
                self._flush()
        return len(s)

    def flush(self):
        with self._lock:
            self._flush()

    def _flush(self):
        data = "".join(self._buf)
        self._buf = []
        if not data or self._cut:
            return
        room = self._limit - self._sent
        if len(data) > room:
            data, self._cut = data[: max(room, 0)], True
        self._sent += len(data)
        _send({"op": "print", "data": data, "cut": self._cut})


class _Future:
    """A call's answer, set by the reader thread (a small
    concurrent.futures.Future: importing that one costs more than a call)."""

    __slots__ = ("_done", "_lock", "_ok", "_value", "_callbacks")

    def __init__(self):
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._ok, self._value, self._callbacks = None, None, []

    def set_result(self, value):
        self._set(True, value)

    def set_exception(self, exc):
        self._set(False, exc)

    def _set(self, ok, value):
        with self._lock:
            if self._callbacks is None:
                return
            self._ok, self._value = ok, value
            callbacks, self._callbacks = self._callbacks, None
            self._done.set()
        for cb in callbacks:
            cb(self)

    def add_done_callback(self, cb):
        with self._lock:
            if self._callbacks is not None:
                self._callbacks.append(cb)
                return
        cb(self)

    def result(self):
        self._done.wait()
        if self._ok:
            return self._value
        raise self._value


_calls = {}
_calls_lock = threading.Lock()
_next_id = [0]
_bridge_closed = []


def _reader():
    for line in _proto_in:
        try:
            msg = json.loads(line)
        except Exception as e:
            # An answer this interpreter cannot read (an integer of more
            # digits than it converts): its call fails, rather than wait.
            if not line.startswith(b'{"id":'):
                continue
            digits = line[6:].split(b",", 1)[0].split(b"}", 1)[0]
            if not digits.isdigit():
                continue
            msg = {"id": int(digits), "error": "the tool's answer cannot be read here: %s" % _clip(str(e), 200)}
        try:
            with _calls_lock:
                fut, tool = _calls.pop(msg["id"])
        except Exception:
            continue
        if "result" in msg:
            fut.set_result(msg["result"])
        elif "type_error" in msg:
            fut.set_exception(TypeError(msg["type_error"]))
        elif "limit" in msg:
            fut.set_exception(LimitExceeded(msg["limit"]))
        else:
            fut.set_exception(ToolError(str(msg.get("error", "the tool failed")), tool))
    with _calls_lock:
        _bridge_closed.append(True)
        left = list(_calls.values())
        _calls.clear()
    for fut, _ in left:
        fut.set_exception(LimitExceeded("the worker ended the run"))


def _program_line():
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_filename == PROGRAM:
            return f.f_lineno
        f = f.f_back
    return 0


_TYPES = {
    "str": (str,),
    "int": (int,),
    "float": (int, float),
    "bool": (bool,),
    "list": (list, tuple),
    "dict": (dict,),
}


def _plain(v, where):
    """v as JSON can carry it: tuples become lists, sets sorted lists."""
    if isinstance(v, _Pending):
        v = v._value()
    if v is None or isinstance(v, (str, bool, int)):
        return v
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            raise TypeError("%s: %r cannot be sent to a tool (not a finite number)" % (where, v))
        return v
    if isinstance(v, (list, tuple)):
        return [_plain(x, where) for x in v]
    if isinstance(v, (set, frozenset)):
        return [_plain(x, where) for x in sorted(v, key=repr)]
    if isinstance(v, dict):
        return {str(k): _plain(x, where) for k, x in v.items()}
    if hasattr(v, "isoformat"):
        return v.isoformat()
    raise TypeError("%s: a %s cannot be sent to a tool (use str, int, float, bool, list or dict)" % (where, type(v).__name__))


class _Tool:
    """A tool as a Python function: positional or keyword arguments, as
    its description lists them; the answer, or ToolError."""

    def __init__(self, desc, limits):
        self.name = desc["name"]
        self.__name__ = self.__qualname__ = self.name
        self.__doc__ = desc.get("doc") or ""
        self.params = desc.get("params") or []
        self._limits = limits

    def __repr__(self):
        return "<tool %s(%s)>" % (self.name, self._param_list())

    def _param_list(self):
        return ", ".join(p["name"] + ("" if p.get("required") else "=None") for p in self.params)

    def _bind(self, args, kwargs):
        names = [p["name"] for p in self.params]
        if len(args) > len(names):
            raise TypeError("%s() takes at most %d positional arguments (%d given); parameters: %s"
                            % (self.name, len(names), len(args), self._param_list()))
        bound = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names:
                hint = _did_you_mean(k, names)
                raise TypeError("%s() got an unexpected keyword argument '%s'%s; parameters: %s"
                                % (self.name, k, hint, self._param_list()))
            if k in bound:
                raise TypeError("%s() got multiple values for argument '%s'" % (self.name, k))
            bound[k] = v
        out = {}
        for p in self.params:
            v = bound.get(p["name"])
            if v is None:
                if p.get("required"):
                    raise TypeError("%s() missing required argument '%s'; parameters: %s"
                                    % (self.name, p["name"], self._param_list()))
                continue
            want = _TYPES.get(p.get("type"), (object,))
            if not isinstance(v, want) or (isinstance(v, bool) and bool not in want):
                raise TypeError("%s(): argument '%s' must be %s, not %s"
                                % (self.name, p["name"], p.get("type"), type(v).__name__))
            out[p["name"]] = _plain(v, "%s(): argument '%s'" % (self.name, p["name"]))
        return out

    def _start(self, /, *args, **kwargs):
        """Sends the call and returns its _Future."""
        if os.getpid() != _PID:
            raise RuntimeError("%s(): tools can be called from the program's own process only, not from a forked one "
                               "(multiprocessing); use threads, parallel_map or asyncio.gather" % self.name)
        bound = self._bind(args, kwargs)
        fut = _Future()
        with _calls_lock:
            if _bridge_closed:
                raise LimitExceeded("the worker ended the run")
            _next_id[0] += 1
            cid = _next_id[0]
            _calls[cid] = (fut, self.name)
        msg = {"op": "call", "id": cid, "tool": self.name, "args": bound, "line": _program_line()}
        size = _json_bytes(bound)
        if size > self._limits["max_arg_bytes"]:
            with _calls_lock:
                _calls.pop(cid, None)
            raise LimitExceeded("tool call limit: the arguments of %s are %d bytes, over the limit of %d"
                                % (self.name, size, self._limits["max_arg_bytes"]))
        _send(msg)
        return fut

    def __call__(self, /, *args, **kwargs):
        fut = self._start(*args, **kwargs)
        if _in_async_code():
            return _Pending(fut)
        return fut.result()

    def _awaitable(self, /, *args, **kwargs):
        return _Pending(self._start(*args, **kwargs))


# The frames of a comprehension or a lambda: a tool call there, in async
# code, is an awaitable (tasks = [get_weather(c) for c in cities]).
_NESTED_FRAMES = frozenset(("<listcomp>", "<genexpr>", "<setcomp>", "<dictcomp>", "<lambda>"))
_CO_COROUTINE = 0x80


def _in_async_code():
    """Whether a tool call is made in async code: an event loop runs in
    this thread and the caller is a coroutine (async def), or a
    comprehension or lambda of the program, not the program's top level
    (whose plain calls stay values; there the calls that are awaited or
    handed to asyncio.gather and the like are rewritten, see
    _AwaitedCalls). A worker thread (asyncio.to_thread) runs no loop."""
    aio = sys.modules.get("asyncio")
    if aio is None or aio.events._get_running_loop() is None:
        return False
    code = sys._getframe(2).f_code  # the caller of _Tool.__call__
    if code.co_flags & _CO_COROUTINE:
        return code.co_name != "<module>"
    return code.co_name in _NESTED_FRAMES and code.co_filename == PROGRAM


def _awaitable(fn):
    """What a call that is awaited (or handed to asyncio.gather and the
    like) calls: a tool's awaitable variant, anything else as it is."""
    return fn._awaitable if isinstance(fn, _Tool) else fn


_GATHERS = {"gather", "create_task", "ensure_future", "wait", "wait_for", "as_completed", "shield"}


class _AwaitedCalls(ast.NodeTransformer):
    """Rewrites the calls a program awaits, and the calls in the arguments
    of asyncio.gather and the like, to go through _awaitable: there a tool
    call returns an awaitable (sent at once, so gathered calls run
    concurrently). Everywhere else a tool call returns its value."""

    def visit_Await(self, node):
        self.generic_visit(node)
        if isinstance(node.value, ast.Call):
            node.value = _wrap_call(node.value)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
        if name in _GATHERS:
            node.args = [_WrapAll().visit(a) for a in node.args]
        return node


class _WrapAll(ast.NodeTransformer):
    """Wraps every call in an argument of asyncio.gather and the like, and
    every tool named there (asyncio.gather(*map(get_weather, cities)))."""

    def visit_Call(self, node):
        if not isinstance(node.func, ast.Name):
            node.func = self.visit(node.func)
        node.args = [self.visit(a) for a in node.args]
        node.keywords = [self.visit(k) for k in node.keywords]
        return _wrap_call(node)

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in _TOOLS:
            wrapped = ast.Call(func=ast.Name(id="__codemode_awaitable__", ctx=ast.Load()), args=[node], keywords=[])
            return ast.copy_location(wrapped, node)
        return node


def _wrap_call(call):
    if isinstance(call.func, ast.Call) and isinstance(call.func.func, ast.Name) and call.func.func.id == "__codemode_awaitable__":
        return call
    wrapped = ast.Call(func=ast.Name(id="__codemode_awaitable__", ctx=ast.Load()), args=[call.func], keywords=[])
    return ast.copy_location(ast.Call(func=ast.copy_location(wrapped, call), args=call.args, keywords=call.keywords), call)


class _Pending:
    """A tool call in async code: sent at once, and a coroutine (awaitable,
    and accepted by asyncio.create_task, TaskGroup.create_task and
    asyncio.gather, so gathered calls run concurrently); usable as its
    value too."""

    __slots__ = ("_fut", "_gen")

    def __init__(self, fut):
        self._fut = fut
        self._gen = None

    def __await__(self):
        return self._wait()

    # The coroutine protocol (collections.abc.Coroutine), for a Task that
    # drives the call.
    def send(self, value):
        if self._gen is None:
            self._gen = self._wait()
        return self._gen.send(value)

    def throw(self, *exc):
        if self._gen is None:
            self._gen = self._wait()
        return self._gen.throw(*exc)

    def close(self):
        if self._gen is not None:
            self._gen.close()

    def _wait(self):
        import asyncio
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()

        def settle(f):
            if not waiter.cancelled():
                if f._ok:
                    waiter.set_result(f._value)
                else:
                    waiter.set_exception(f._value)

        def done(f):
            try:
                loop.call_soon_threadsafe(settle, f)
            except RuntimeError:
                pass  # the loop is closed: no one awaits any more

        self._fut.add_done_callback(done)
        return (yield from waiter)

    def _value(self):
        return self._fut.result()

    def __getattr__(self, name):
        if name.startswith(("__", "cr_", "gi_")):
            raise AttributeError(name)  # asked of a coroutine (asyncio, inspect): not the value's
        return getattr(self._value(), name)

    def __getitem__(self, k):
        return self._value()[k]

    def __iter__(self):
        return iter(self._value())

    def __len__(self):
        return len(self._value())

    def __contains__(self, x):
        return x in self._value()

    def __bool__(self):
        return bool(self._value())

    def __str__(self):
        return str(self._value())

    def __repr__(self):
        return repr(self._value())

    def __format__(self, spec):
        return format(self._value(), spec)

    def __int__(self):
        return int(self._value())

    def __float__(self):
        return float(self._value())

    def __index__(self):
        return self._value().__index__()

    def __reversed__(self):
        return reversed(self._value())


def _binary(name):
    def op(self, other):
        f = getattr(self._value(), name, None)
        return NotImplemented if f is None else f(other._value() if isinstance(other, _Pending) else other)
    op.__name__ = name
    return op


for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "or", "and", "lt", "le", "gt", "ge"):
    for _name in ("__%s__" % _op, "__r%s__" % _op) if _op not in ("lt", "le", "gt", "ge") else ("__%s__" % _op,):
        setattr(_Pending, _name, _binary(_name))


def _did_you_mean(name, candidates):
    best, dist = None, 3
    for c in candidates:
        d = _edits(name, c)
        if d < dist:
            best, dist = c, d
    return " (did you mean %s?)" % best if best else ""


def _edits(a, b):
    if abs(len(a) - len(b)) > 2:
        return 3
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def parallel_map(fn, calls, max_workers=8):
    """Calls fn once per item of calls, at once, and returns the results in
    order. For a tool, an item is a dict of keyword arguments (or a list
    of positional ones, or the one argument), and a failed call's slot
    holds its ToolError; any other function runs in threads."""
    calls = list(calls)
    if isinstance(fn, str):
        fn = _TOOLS.get(fn)
        if fn is None:
            raise NameError("parallel_map: unknown tool; known tools: %s" % (", ".join(sorted(_TOOLS)) or "(none)"))
    if isinstance(fn, _Tool):
        futs = []
        for c in calls:
            if isinstance(c, dict):
                futs.append(fn._start(**c))
            elif isinstance(c, (list, tuple)):
                futs.append(fn._start(*c))
            else:
                futs.append(fn._start(c))
        out = []
        for f in futs:
            try:
                out.append(f.result())
            except ToolError as e:
                out.append(e)
        return out
    import concurrent.futures
    with concurrent.futures.ThreadPoolExecutor(max(1, min(max_workers, 32))) as ex:
        return list(ex.map(fn, calls))


_TOOLS = {}


def _bound_names(tree):
    """Every name the program binds anywhere, and whether it star-imports."""
    names, star = set(), False
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            if node.name == "*":
                star = True
            else:
                names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
    return names, star


def _check(tree, known):
    """The static check: calls of unknown names, and tool calls whose
    arguments do not fit the tool. Returns (line, message) or None."""
    bound, star = _bound_names(tree)
    defined = bound | set(dir(builtins)) | set(known)
    issues = []
    tools_list = ", ".join(sorted(_TOOLS)) or "(none)"
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        name = node.func.id
        if name in _TOOLS and name not in bound:
            msg = _check_tool_call(_TOOLS[name], node.args, node.keywords)
            if msg:
                issues.append((node.lineno, msg))
        elif name == "parallel_map" and "parallel_map" not in bound:
            issues.extend(_check_parallel_map(node, tools_list))
        elif name not in defined and not star:
            hint = _did_you_mean(name, list(_TOOLS) + sorted(bound | set(dir(builtins))))
            issues.append((node.lineno, "unknown tool or function %s%s; known tools: %s" % (name, hint, tools_list)))
    if not issues:
        return None
    issues.sort()
    first = issues[0]
    rest = ["line %d: %s" % i for i in issues[1:]]
    return first[0], "\n".join([first[1]] + rest)


def _check_tool_call(tool, args, keywords):
    if any(isinstance(a, ast.Starred) for a in args) or any(k.arg is None for k in keywords):
        return None  # *args or **kwargs: left to the call
    names = [p["name"] for p in tool.params]
    if len(args) > len(names):
        return "%s() takes at most %d positional arguments (%d given); parameters: %s" % (
            tool.name, len(names), len(args), tool._param_list())
    given = set(names[: len(args)])
    for k in keywords:
        if k.arg not in names:
            return "%s() got an unexpected keyword argument '%s'%s; parameters: %s" % (
                tool.name, k.arg, _did_you_mean(k.arg, names), tool._param_list())
        if k.arg in given:
            return "%s() got multiple values for argument '%s'" % (tool.name, k.arg)
        given.add(k.arg)
    for p in tool.params:
        if p.get("required") and p["name"] not in given:
            return "%s() missing required argument '%s'; parameters: %s" % (tool.name, p["name"], tool._param_list())
    return None


def _check_parallel_map(node, tools_list):
    if len(node.args) < 2:
        return []
    fn, calls = node.args[0], node.args[1]
    tool = None
    if isinstance(fn, ast.Constant) and isinstance(fn.value, str):
        tool = _TOOLS.get(fn.value)
        if tool is None:
            return [(node.lineno, "parallel_map: unknown tool %r%s; known tools: %s" % (
                fn.value, _did_you_mean(fn.value, list(_TOOLS)), tools_list))]
    elif isinstance(fn, ast.Name):
        tool = _TOOLS.get(fn.id)
    if tool is None or not isinstance(calls, (ast.List, ast.Tuple)):
        return []
    out = []
    for item in calls.elts:
        if isinstance(item, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in item.keys):
            kws = [ast.keyword(arg=k.value, value=v) for k, v in zip(item.keys, item.values)]
            msg = _check_tool_call(tool, [], kws)
            if msg:
                out.append((item.lineno, "parallel_map: " + msg))
    return out


def _json_value(v):
    """The program's value as JSON can carry it (the observation)."""
    if v is None or isinstance(v, (str, bool, int)):
        return v
    if isinstance(v, float):
        return v if v == v and v not in (float("inf"), float("-inf")) else repr(v)
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    if isinstance(v, (set, frozenset)):
        items = [_json_value(x) for x in v]
        try:
            return sorted(items)
        except TypeError:
            return sorted(items, key=repr)
    if isinstance(v, dict):
        return {k if isinstance(k, str) else str(k): _json_value(x) for k, x in v.items()}
    if isinstance(v, _Pending):
        return _json_value(v._value())
    if isinstance(v, ToolError):
        return {"error": v.message, "tool": v.tool}
    if hasattr(v, "isoformat"):
        return v.isoformat()
    if hasattr(v, "tolist"):
        return _json_value(v.tolist())
    return repr(v)


def _program_trace(e):
    """The traceback, the program's frames only (the prelude's are noise)."""
    import traceback
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == PROGRAM]
    lines = ["Traceback (most recent call last):\n"] + traceback.format_list(frames) if frames else []
    lines += traceback.format_exception_only(type(e), e)
    line = frames[-1].lineno if frames else 0
    return line, "".join(lines).rstrip("\n")


def _json_bytes(v):
    """The size of v as JSON on the bridge, in bytes, as the worker counts."""
    return len(json.dumps(v, ensure_ascii=False).encode("utf-8", "replace"))


def _clip(s, n):
    """s in at most about n characters: its head and its tail."""
    if len(s) <= n:
        return s
    return "%s\n... (%d characters cut) ...\n%s" % (s[:n // 2], len(s) - n, s[-(n // 2):])


def _done(**msg):
    sys.stdout.flush()
    # An error's text is the program's (an exception may carry a whole
    # tool result): clipped, so that the line stays far below the bridge's.
    if "msg" in msg:
        msg["msg"] = _clip(msg["msg"], 2000)
    if "trace" in msg:
        msg["trace"] = _clip(msg["trace"], 8000)
    _send({"op": "done", **msg})
    _proto_out.flush()
    os._exit(0)


# How deep the prelude's passes over the program's syntax tree may
# recurse (a 500-term a + b + ... is 500 levels): above the default 1000,
# well within the C stack (Python-to-Python calls use none in 3.11+).
_AST_RECURSION = 8000

_TOO_DEEP = ("the program nests too deeply to be checked (e.g. a very long chain of + or of elif): "
             "split it into smaller expressions, or use a loop, a list or a dict")


def _compile(code):
    """Parses, checks and compiles the program; reports a failure (done)."""
    try:
        tree = ast.parse(code, PROGRAM)
    except SyntaxError as e:
        _done(ok=False, kind="syntax", line=e.lineno or 0, col=e.offset or 0, msg="%s: %s" % (type(e).__name__, e.msg))
    except (RecursionError, MemoryError):
        _done(ok=False, kind="check", msg=_TOO_DEEP)
    known = ["ToolError", "LimitExceeded", "parallel_map", "OUTPUTS"]
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, _AST_RECURSION))
    try:
        problem = _check(tree, known)
        if not problem:
            tree = _AwaitedCalls().visit(tree)
            has_value = bool(tree.body) and isinstance(tree.body[-1], ast.Expr)
            if has_value:
                last = tree.body[-1]
                tree.body[-1] = ast.copy_location(ast.Assign(targets=[ast.Name(id=RESULT, ctx=ast.Store())], value=last.value), last)
            ast.fix_missing_locations(tree)
    except RecursionError:
        problem = (0, _TOO_DEEP)
    finally:
        sys.setrecursionlimit(old)
    if problem:
        _done(ok=False, kind="check", line=problem[0], msg=problem[1])
    try:
        # The compiler's own depth limit follows the recursion limit.
        compiled = compile(tree, PROGRAM, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    except RecursionError:
        _done(ok=False, kind="check", msg=_TOO_DEEP)
    except SyntaxError as e:
        _done(ok=False, kind="syntax", line=e.lineno or 0, col=e.offset or 0, msg="%s: %s" % (type(e).__name__, e.msg))
    return compiled, has_value


def _main_module():
    """A fresh module for the program, registered as __main__ (pickle,
    typing and `import __main__` find the program's own names there, not
    the prelude's); the prelude stays importable under another name."""
    import types
    sys.modules["__codemode_prelude__"] = sys.modules["__main__"]
    mod = types.ModuleType("__main__")
    mod.__file__ = os.path.abspath("program.py")
    mod.__builtins__ = builtins
    sys.modules["__main__"] = mod
    env = mod.__dict__
    env.update({"ToolError": ToolError, "LimitExceeded": LimitExceeded, "parallel_map": parallel_map,
                "OUTPUTS": "/var/outputs", "__codemode_awaitable__": _awaitable})
    env.update(_TOOLS)
    return env


def _run(code, spec):
    limits = spec["limits"]
    for desc in spec["tools"]:
        _TOOLS[desc["name"]] = _Tool(desc, limits)
    compiled, has_value = _compile(code)
    import linecache  # for the source lines of a traceback
    linecache.cache[PROGRAM] = (len(code), None, code.splitlines(True), PROGRAM)
    env = _main_module()
    try:
        if compiled.co_flags & 0x80:  # CO_COROUTINE: the program awaits at top level
            import asyncio
            asyncio.run(eval(compiled, env))
        else:
            exec(compiled, env)
    except SystemExit as e:
        if e.code not in (None, 0):
            _done(ok=False, kind="runtime", line=_program_trace(e)[0], msg="SystemExit: %s" % e.code)
    except LimitExceeded as e:
        line, _ = _program_trace(e)
        _done(ok=False, kind="limit", line=line, msg=str(e))
    except MemoryError as e:
        line, _ = _program_trace(e)
        _done(ok=False, kind="limit", line=line, msg="memory limit: MemoryError (the program used more memory than the run may)")
    except BaseException as e:
        line, trace = _program_trace(e)
        _done(ok=False, kind="runtime", line=line, msg=trace.splitlines()[-1].strip(), trace=trace)
    value = env.get(RESULT) if has_value else None
    try:
        value = _json_value(value)
        size = _json_bytes(value)
    except RecursionError:
        _done(ok=False, kind="runtime", msg="the program's value nests too deeply to be shown")
    except Exception as e:
        _done(ok=False, kind="runtime", msg="the program's value cannot be shown: %s: %s" % (type(e).__name__, e))
    if size > limits["max_value_bytes"]:
        _done(ok=False, kind="limit", msg="value limit: the last expression's value is %d bytes as JSON, over the limit of %d; return a smaller value, e.g. a summary or a slice" % (size, limits["max_value_bytes"]))
    _done(ok=True, value=value, has_value=has_value)


def main():
    with open("spec.json", encoding="utf-8") as f:
        spec = json.load(f)
    with open("program.py", encoding="utf-8") as f:
        code = f.read()
    threading.Thread(target=_reader, daemon=True).start()
    sys.stdout = sys.stderr = _Printer(spec["limits"]["max_output_bytes"])
    _run(code, spec)


main()
