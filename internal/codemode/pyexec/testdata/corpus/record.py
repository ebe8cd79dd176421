"""Records what real CPython gives for each program of the corpus.

Run from this directory with Debian's interpreter:

    /usr/bin/python3 record.py > expected.json

Each program runs in plain CPython, in a fresh namespace, over the tool
fakes of tools.json (the table the Go test serves over NATS): a tool is an
ordinary Python function (async def in a program that awaits, as such a
program's tools would be), a failing one raises ToolError. Nothing of
code mode's prelude is used: the test compares the code-mode path with
CPython itself. The value is the last expression's, shown as JSON as code
mode shows it.
"""
import ast
import asyncio
import contextlib
import glob
import io
import json
import os
import sys
import tempfile

TOOLS = json.load(open("tools.json"))


class ToolError(Exception):
    def __init__(self, message, tool=None):
        super().__init__(message)
        self.message = message
        self.tool = tool

    def __str__(self):
        return "%s: %s" % (self.tool, self.message)


def answer(name, args):
    spec = TOOLS[name]
    key = json.dumps({k: v for k, v in args.items() if v is not None}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if key in spec["answers"]:
        return json.loads(json.dumps(spec["answers"][key]))
    raise ToolError("%s: %s" % (spec["error"], key), name)


def make_tool(name, is_async):
    params = TOOLS[name]["params"]
    sig = ", ".join(p["name"] + ("" if p["required"] else "=None") for p in params)
    body = "answer(%r, {%s})" % (name, ", ".join("%r: %s" % (p["name"], p["name"]) for p in params))
    ns = {"answer": answer}
    exec("%sdef %s(%s):\n    return %s\n" % ("async " if is_async else "", name, sig, body), ns)
    return ns[name]


def parallel_map(fn, calls):
    out = []
    for c in calls:
        try:
            out.append(fn(**c) if isinstance(c, dict) else fn(*c) if isinstance(c, (list, tuple)) else fn(c))
        except ToolError as e:
            out.append(e)
    return out


def as_json(v):
    if v is None or isinstance(v, (str, bool, int)):
        return v
    if isinstance(v, float):
        return v if v == v and v not in (float("inf"), float("-inf")) else repr(v)
    if isinstance(v, (list, tuple)):
        return [as_json(x) for x in v]
    if isinstance(v, (set, frozenset)):
        items = [as_json(x) for x in v]
        try:
            return sorted(items)
        except TypeError:
            return sorted(items, key=repr)
    if isinstance(v, dict):
        return {k if isinstance(k, str) else str(k): as_json(x) for k, x in v.items()}
    if isinstance(v, ToolError):
        return {"error": v.message, "tool": v.tool}
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return repr(v)


def run(path):
    code = open(path).read()
    tree = ast.parse(code, "<program>")
    has_value = bool(tree.body) and isinstance(tree.body[-1], ast.Expr)
    if has_value:
        last = tree.body[-1]
        tree.body[-1] = ast.copy_location(ast.Assign(targets=[ast.Name(id="__value__", ctx=ast.Store())], value=last.value), last)
    ast.fix_missing_locations(tree)
    compiled = compile(tree, "<program>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    is_async = "await" in code
    outputs = tempfile.mkdtemp()
    env = {"__name__": "__main__", "ToolError": ToolError, "parallel_map": parallel_map, "OUTPUTS": outputs}
    for name in TOOLS:
        env[name] = make_tool(name, is_async)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        if compiled.co_flags & 0x80:
            asyncio.run(eval(compiled, env))
        else:
            exec(compiled, env)
    return {"value": as_json(env.get("__value__")), "output": out.getvalue()}


def main():
    results = {}
    for path in sorted(glob.glob("[0-9]*.py")):
        results[os.path.basename(path)] = run(path)
    json.dump({"python": sys.version.split()[0], "programs": results}, sys.stdout, indent=1, sort_keys=True, ensure_ascii=False)
    sys.stdout.write("\n")


main()
