# The warm runners' in-process run (internal/sandbox/warm.go), shared by
# the process backend's zygote and the docker backend's stub: it runs an
# argv of sandbox.WarmArgs in the current (forked, already isolated)
# interpreter as a fresh `python` would, and never returns.
import os as _os, runpy as _runpy, signal as _signal, sys as _sys, types as _types


def warm_preload():
    # What a warm runner does once, before its first fork, that every run
    # would otherwise do again: import pytest and each plugin it loads by
    # default, and scan the environment's installed distributions (pytest
    # and pluggy look for plugins there on every run). A runner serves one
    # environment, which does not change under it, so
    # importlib.metadata.distributions() without arguments answers from
    # that scan, plus a fresh scan of any sys.path entry the run added
    # (its workspace). Nothing here is shared between runs: each is a fork
    # of this state.
    try:
        import _pytest.config as config
    except ImportError:
        return  # an image without pytest: scripts only
    import importlib, importlib.metadata as metadata, itertools
    for name in tuple(config.essential_plugins) + tuple(config.default_plugins):
        try:
            importlib.import_module("_pytest." + name)
        except Exception:
            pass
    # Only absolute entries are kept: "" (and any relative one) names the
    # directory of the moment, the run's workspace, and is looked at anew.
    scanned = [p for p in _sys.path if _os.path.isabs(p)]
    discover = metadata.distributions
    found = list(discover(path=scanned))

    def distributions(**kwargs):
        if kwargs:
            return discover(**kwargs)
        added = [p for p in _sys.path if p not in scanned]
        return itertools.chain(discover(path=added) if added else (), found)

    metadata.distributions = distributions
    try:
        # The report's escaping compiles a large character class on its
        # first use (a few ms of every run): once here, into re's cache.
        import _pytest.junitxml as junitxml
        junitxml.bin_xml_escape("")
    except Exception:
        pass
    _prebuild_pytest_config(config)


# What the sandbox's pytest runs block (the harness and mutate.py both pass
# -p no:cacheprovider): the plugin arguments a prebuilt config stands for.
_PREBUILT_PLUGIN_ARGS = ("no:cacheprovider",)


def _plugin_args(args):
    # The "-p no:NAME" arguments of args, as pytest's consider_preparse
    # reads them before it registers its default plugins.
    out, i = [], 0
    while i < len(args):
        opt, i = args[i], i + 1
        if not isinstance(opt, str):
            continue
        if opt == "-p":
            if i >= len(args):
                break
            parg, i = args[i], i + 1
        elif opt.startswith("-p"):
            parg = opt[2:]
        else:
            continue
        parg = parg.strip()
        if parg.startswith("no:"):
            out.append(parg)
    return tuple(sorted(set(out)))


def _prebuild_pytest_config(config):
    # pytest makes a plugin manager and registers its forty-odd default
    # plugins at the start of every run, before it reads any file: about
    # 5 ms of a 40 ms warm run. The runner makes one here, with the plugin
    # arguments its runs pass, and a run's get_config takes it when the
    # run asks for that same one (its -p no: arguments, no plugin objects,
    # no PYTEST_DEBUG, which the manager reads when it is made); any other
    # run gets a fresh one, as before. Each run is a fork: it takes its
    # own copy, so what one run does to its config no other run sees.
    # Reading the run's files (rootdir, ini files, conftest.py) happens
    # after get_config, in the run, as in a fresh interpreter.
    try:
        import pathlib
        make = config.get_config
        ready = make([a for arg in _PREBUILT_PLUGIN_ARGS for a in ("-p", arg)])
        ready._warm_prebuilt = True
    except Exception:
        return

    def get_config(args=None, plugins=None):
        nonlocal ready
        pre, ready = ready, None  # one run, one config
        if pre is None or plugins or args is None or "PYTEST_DEBUG" in _os.environ \
                or _plugin_args(args) != _PREBUILT_PLUGIN_ARGS:
            return make(args, plugins)
        pre.invocation_params = config.Config.InvocationParams(args=args, plugins=plugins, dir=pathlib.Path.cwd())
        return pre

    config.get_config = get_config


def _run_argv(argv, ns):
    # argv is the run's argv without "python": ["-m", mod, ...], ["-c",
    # code, ...] or [script, ...], after an optional "-I" (sandbox.WarmArgs
    # lets nothing else through). sys.path[0] is what a fresh interpreter
    # puts first; -I puts nothing there.
    isolated = argv[0] == "-I"
    if isolated:
        argv = argv[1:]
    if argv[0] == "-m":
        _sys.argv = ["-m"] + argv[2:]
        _sys.path[0] = _os.getcwd()
    elif argv[0] == "-c":
        _sys.argv = ["-c"] + argv[2:]
        _sys.path[0] = ""
    else:
        _sys.argv = list(argv)
        _sys.path[0] = _os.path.dirname(_os.path.abspath(argv[0]))
    if isolated:
        del _sys.path[0]
    if argv[0] == "-m":
        return _runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif argv[0] == "-c":
        main = _types.ModuleType("__main__")
        main.__dict__["__builtins__"] = __builtins__
        _sys.modules["__main__"] = main
        ns[0] = main.__dict__  # the namespace, should the program not end
        exec(compile(argv[1], "<string>", "exec"), main.__dict__)
        return main.__dict__
    else:
        return _runpy.run_path(argv[0], run_name="__main__")


def _finalize(ns, before):
    # A fresh interpreter's last steps, after its atexit handlers: the
    # modules' globals are cleared, what they held is finalized, and a
    # last collection runs. A file the program opened and never closed is
    # flushed there (a script's `f = open("out.json", "w"); f.write(...)`):
    # without this, os._exit would drop its buffer, and a run that writes
    # its output so would pass cold and fail warm. The run's own namespace
    # and the modules it imported are cleared, not the runner's. A file
    # the clearing does not free (held by a frame of an uncaught
    # exception, or in a cycle, where a collection may close its buffer
    # before its text layer has written into it) is flushed by hand, text
    # layers first. warm_run froze what existed before the run, so the
    # collector sees only the run's objects.
    import gc, io
    dicts = [d for d in ns if isinstance(d, dict)]
    for name, mod in list(_sys.modules.items()):
        if name not in before:
            d = getattr(mod, "__dict__", None)
            if isinstance(d, dict):
                dicts.append(d)
    for d in dicts:
        try:
            d.clear()
        except BaseException:
            pass
    files = [o for o in gc.get_objects() if isinstance(o, io.IOBase)]
    files.sort(key=lambda f: not isinstance(f, io.TextIOBase))
    for f in files:
        try:
            if not f.closed:
                f.flush()
        except BaseException:
            pass
    files = None
    gc.collect()


def _exit_code(e):
    if e.code is None:
        return 0
    if isinstance(e.code, int):
        return e.code & 0xFF
    print(e.code, file=_sys.stderr)
    return 1


def warm_run(argv, env):
    _os.environ.clear()
    _os.environ.update(env)
    _sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
    if env.get("PYTHONUNBUFFERED"):
        _sys.stdout.reconfigure(write_through=True)
        _sys.stderr.reconfigure(write_through=True)
    # A fresh interpreter's dispositions.
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    for s in (_signal.SIGPIPE, _signal.SIGXFSZ):
        _signal.signal(s, _signal.SIG_IGN)
    for s in (_signal.SIGCHLD, _signal.SIGALRM, _signal.SIGUSR1, _signal.SIGTERM):
        _signal.signal(s, _signal.SIG_DFL)
    # What exists now is the runner's: frozen, the collector leaves it
    # alone (and does not walk it), and _finalize finds the run's files
    # among the run's own objects.
    import gc
    gc.freeze()
    code = 0
    before = set(_sys.modules)
    ns = [None]
    try:
        ns[0] = _run_argv(argv, ns)
    except SystemExit as e:
        code = _exit_code(e)
    except BaseException as e:
        tb = e.__traceback__  # without the runner's own frames, as a fresh interpreter prints it
        while tb is not None and tb.tb_frame.f_code.co_filename in ("<warm-runner>", _runpy.__file__):
            tb = tb.tb_next
        _sys.excepthook(type(e), e.with_traceback(tb), tb)
        e = tb = None  # its frames hold the run's globals, which _finalize must free
        code = 1
    # A fresh interpreter's shutdown, in its order: threading's exit hooks
    # (concurrent.futures joins its workers there) and the joining of
    # non-daemon threads, then the atexit handlers.
    if "threading" in _sys.modules:
        try:
            _sys.modules["threading"]._shutdown()
        except BaseException:
            pass
    try:
        import atexit
        atexit._run_exitfuncs()
    except BaseException:
        pass
    try:
        _finalize(ns, before)
    except BaseException:
        pass
    try:
        _sys.stdout.flush()
        _sys.stderr.flush()
    except BaseException:
        pass
    _os._exit(code)
