"""AutoCoderAgent: the reference's agent object (flyteplugins-codegen), over
autocoder's HTTP API. Its constructor takes the settings of every job it
submits; generate(...) submits one, waits for it and returns its result."""

from __future__ import annotations

import datetime
import json
import os
import secrets as _secrets
import tempfile
import time
from types import TracebackType
from typing import Any, Iterable, Mapping, Optional, Union

from . import _http
from .errors import AutoCoderError, InvalidRequestError, UnavailableError, WaitTimeout
from .context import upload_context
from .result import CodeGenEvalResult
from .types import INPUT_TYPES, OUTPUT_TYPES, Dir, File, TypeLike, is_dataframe, wire_type

_BACKENDS = {"pipeline": "pipeline", "litellm": "pipeline", "agent": "agent", "claude": "agent"}
_LITELLM_PARAMS = ("temperature", "max_tokens", "top_p", "seed")


def _duration(seconds: Optional[Union[float, str]], field: str) -> Optional[str]:
    """A timeout in seconds (int or float), or a duration text ("90s"), as the wire's."""
    if seconds is None:
        return None
    if isinstance(seconds, str):
        return seconds
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0:
        raise InvalidRequestError("must be a positive number of seconds", field)
    return "%gs" % seconds


def _resources(r: Any, field: str) -> Optional[dict[str, Any]]:
    """Resources, a dict {"cpu", "memory"} or any object with cpu and memory
    (flyte.Resources) as the wire's."""
    if r is None:
        return None
    if isinstance(r, dict):
        unknown = set(r) - {"cpu", "memory"}
        if unknown:
            raise InvalidRequestError("unknown resource %s (want cpu and memory)" % ", ".join(sorted(unknown)), field)
        cpu, mem = r.get("cpu"), r.get("memory")
    else:
        cpu, mem = getattr(r, "cpu", None), getattr(r, "memory", None)
    out: dict[str, Any] = {}
    if cpu is not None:
        try:
            out["cpu"] = float(cpu)
        except (TypeError, ValueError):
            raise InvalidRequestError("cpu %r is not a number of cores" % (cpu,), field + ".cpu") from None
    if mem is not None:
        out["memory"] = str(mem)
    return out or None


def _secret_names(secrets: Any, field: str) -> Optional[list[str]]:
    """Secret names: strings, or objects with a key (flyte.Secret; its
    as_env_var when it names one). Values never leave the worker."""
    if secrets is None:
        return None
    if isinstance(secrets, str):
        secrets = [secrets]
    names = []
    for i, s in enumerate(secrets):
        name = s if isinstance(s, str) else (getattr(s, "as_env_var", None) or getattr(s, "key", None))
        if not isinstance(name, str) or not name:
            raise InvalidRequestError("a secret is named by a string (or has a key)", "%s[%d]" % (field, i))
        names.append(name)
    return names


def run_options(resources: Any = None, retries: Optional[int] = None, timeout: Optional[Union[float, str]] = None,
                env_vars: Optional[Mapping[str, Any]] = None, secrets: Any = None,
                cache: Optional[str] = None) -> Optional[dict[str, Any]]:
    """The settings of a run (RunOptions on the wire), None when none is given."""
    o: dict[str, Any] = {}
    res = _resources(resources, "resources")
    if res:
        o["resources"] = res
    if retries is not None:
        o["retries"] = int(retries)
    if timeout is not None:
        o["timeout"] = _duration(timeout, "timeout")
    if cache is not None:
        o["cache"] = cache
    if env_vars:
        o["env_vars"] = {str(k): str(v) for k, v in env_vars.items()}
    names = _secret_names(secrets, "secrets")
    if names:
        o["secrets"] = names
    return o or None


class AutoCoderAgent:
    """Generates a tested Python script per task, on an autocoder deployment.

    The settings are the reference's (docs/settings.md lists each and where
    it lives here); model settings and sandbox settings go with every job:

        agent = AutoCoderAgent(name="summarize-sales", model="gpt-4.1",
                               resources={"cpu": 1, "memory": "1Gi"},
                               litellm_params={"temperature": 0.2, "max_tokens": 4096})
        result = agent.generate(prompt="...", samples={"sales": "sales.csv"},
                                outputs={"total_revenue": float, "total_units": int})
        total_revenue, total_units = result.run()

    url and token are the HTTP API's (default: AUTOCODER_URL and
    AUTOCODER_TOKEN, a token with scope submit). A job names a model from
    the operator's model table; it never carries a key or an endpoint, so
    api_key and api_base are refused. A setting the job would ignore is
    refused too: max_iterations with the agent backend, agent_max_turns
    without it, image_config's registry and registry_secret. Left out,
    max_iterations and agent_max_turns are the server's defaults (10, 50).
    """

    def __init__(self, model: Optional[str] = None, name: str = "auto-coder", system_prompt: Optional[str] = None,
                 api_key: Optional[str] = None, api_base: Optional[str] = None,
                 litellm_params: Optional[Mapping[str, Any]] = None, base_packages: Optional[Iterable[str]] = None,
                 resources: Any = None, image_config: Any = None, max_iterations: Optional[int] = None,
                 max_sample_rows: int = 100, skip_tests: bool = False, sandbox_retries: int = 0,
                 timeout: Optional[Union[float, str]] = None, env_vars: Optional[Mapping[str, Any]] = None, secrets: Any = None,
                 cache: str = "auto", backend: str = "pipeline", agent_max_turns: Optional[int] = None,
                 block_network: Optional[bool] = None, *, system_prompt_prefix: Optional[str] = None,
                 temperature: Optional[float] = None, max_tokens: Optional[int] = None, top_p: Optional[float] = None,
                 seed: Optional[int] = None, python_version: Optional[Union[str, tuple[int, ...], list[int]]] = None,
                 token_budget: Optional[int] = None, candidates: Optional[int] = None,
                 validate: Optional[str] = None, first_pass: Optional[str] = None, mutation: Optional[str] = None,
                 min_test_strength: Optional[float] = None, strengthen_rounds: Optional[int] = None,
                 max_mutants: Optional[int] = None, mutation_budget: Optional[Union[float, str]] = None,
                 url: Optional[str] = None, token: Optional[str] = None,
                 wait: float = 1800.0, poll_interval: float = 0.5) -> None:
        for field, value in (("api_key", api_key), ("api_base", api_base)):
            if value is not None:
                raise InvalidRequestError("a job names a model from the operator's model table; "
                                          "keys and endpoints are the operator's, never a job's", field)
        if block_network is False:
            raise InvalidRequestError("sandboxes here never have network (builds reach the package index through "
                                      "the worker's proxy); leave block_network out or pass True", "block_network")
        if backend not in _BACKENDS:
            raise InvalidRequestError("unsupported backend %r (want pipeline or agent; litellm and claude are "
                                      "their reference names)" % (backend,), "backend")
        # Each bound is read by one backend only; the other's is refused, not dropped.
        if _BACKENDS[backend] == "agent" and max_iterations is not None:
            raise InvalidRequestError("does not apply to backend %r (agent_max_turns bounds the agent)" % (backend,),
                                      "max_iterations")
        if _BACKENDS[backend] != "agent" and agent_max_turns is not None:
            raise InvalidRequestError("applies only to backend agent (max_iterations bounds backend %r)" % (backend,),
                                      "agent_max_turns")
        for field in ("registry", "registry_secret"):
            value = image_config.get(field) if isinstance(image_config, dict) else getattr(image_config, field, None)
            if value is not None:
                raise InvalidRequestError("images are built and kept by the operator's sandbox workers; a job names "
                                          "no registry (only python_version is taken)", "image_config." + field)
        params = dict(litellm_params or {})
        unknown = sorted(set(params) - set(_LITELLM_PARAMS))
        if unknown:
            raise InvalidRequestError("unsupported parameter %s (supported: %s)" % (unknown[0], ", ".join(_LITELLM_PARAMS)),
                                      "litellm_params." + unknown[0])
        for k, v in (("temperature", temperature), ("max_tokens", max_tokens), ("top_p", top_p), ("seed", seed)):
            if v is not None:
                params[k] = v
        if python_version is None and image_config is not None:
            python_version = image_config.get("python_version") if isinstance(image_config, dict) \
                else getattr(image_config, "python_version", None)
        if isinstance(python_version, (tuple, list)):
            python_version = ".".join(str(x) for x in python_version[:2])
        self.name = name
        self.model = model
        self.conn = _http.Connection(url, token)
        self.wait = wait
        self.poll_interval = poll_interval
        self.options = self._options(model, system_prompt, system_prompt_prefix, params, base_packages, resources,
                                     python_version, max_iterations, max_sample_rows, skip_tests, sandbox_retries,
                                     timeout, env_vars, secrets, cache, _BACKENDS[backend], agent_max_turns, token_budget)
        # autocoder's own settings (docs/settings.md): the server checks each
        # and refuses, by name, one the job would ignore.
        settings: tuple[tuple[str, Any], ...] = (
            ("candidates", candidates), ("validate", validate), ("first_pass", first_pass), ("mutation", mutation),
            ("min_test_strength", min_test_strength), ("strengthen_rounds", strengthen_rounds),
            ("max_mutants", max_mutants), ("mutation_budget", _duration(mutation_budget, "mutation_budget")))
        for k, v in settings:
            if v is not None:
                self.options[k] = v

    @staticmethod
    def _options(model: Optional[str], system_prompt: Optional[str], prefix: Optional[str], params: Mapping[str, Any],
                 base_packages: Optional[Iterable[str]], resources: Any, python: Optional[str], max_iterations: Optional[int],
                 max_sample_rows: int, skip_tests: bool, sandbox_retries: int, timeout: Optional[Union[float, str]],
                 env_vars: Optional[Mapping[str, Any]], secrets: Any, cache: str, backend: str,
                 agent_max_turns: Optional[int], token_budget: Optional[int]) -> dict[str, Any]:
        o: dict[str, Any] = {"max_sample_rows": max_sample_rows, "cache": cache, "backend": backend}
        pairs: tuple[tuple[str, Any], ...] = (("model", model), ("max_iterations", max_iterations), ("agent_max_turns", agent_max_turns),
                 ("system_prompt", system_prompt), ("system_prompt_prefix", prefix),
                 ("base_packages", list(base_packages) if base_packages else None),
                 ("resources", _resources(resources, "resources")), ("python", python),
                 ("skip_tests", skip_tests or None), ("sandbox_retries", sandbox_retries or None),
                 ("timeout", _duration(timeout, "timeout")),
                 ("env_vars", {str(k): str(v) for k, v in env_vars.items()} if env_vars else None),
                 ("secrets", _secret_names(secrets, "secrets")), ("token_budget", token_budget))
        for k, v in pairs:
            if v is not None:
                o[k] = v
        o.update(params)
        return o

    def generate(self, prompt: str, schema: Optional[str] = None, constraints: Optional[Iterable[str]] = None,
                 samples: Optional[Mapping[str, Any]] = None, inputs: Optional[Mapping[str, TypeLike]] = None,
                 outputs: Optional[Mapping[str, TypeLike]] = None, *, wait: Optional[float] = None,
                 context: Optional[Iterable[str]] = None) -> CodeGenEvalResult:
        """Submits a job, waits for it and returns its CodeGenEvalResult.

        samples maps a name to a file path, a File, or a pandas DataFrame
        (written to CSV here); inputs and outputs map names to Python types
        (str, int, float, bool, File, Dir; outputs also datetime and
        timedelta). context names documentation files or folders (Markdown,
        text, HTML), read into one bundle and uploaded: the model is given
        the parts of it that bear on each stage (docs/coderunner.md). A
        request the server refuses raises
        InvalidRequestError with the field; a job that fails returns a
        result whose success is False, as the reference's does.
        """
        out_types = {k: wire_type(t, "outputs." + k, OUTPUT_TYPES) for k, t in (outputs or {}).items()}
        in_types: dict[str, str] = {}
        for k, t in (inputs or {}).items():
            if samples and k in samples:
                continue  # a sample is a File input already (the reference adds it; here it is a sample)
            if k in RUN_KEYWORDS:
                # result.run(timeout=30) would set the run's timeout, never the input.
                raise InvalidRequestError("%s is a setting of result.run(), so it cannot be an input's name: rename the input"
                                          % k, "inputs." + k)
            in_types[k] = wire_type(t, "inputs." + k, INPUT_TYPES)
        spec: dict[str, Any] = {"name": self.name, "prompt": prompt, "options": dict(self.options)}
        if schema:
            spec["schema"] = schema
        if constraints:
            spec["constraints"] = list(constraints)
        if in_types:
            spec["inputs"] = in_types
        if out_types:
            spec["outputs"] = out_types
        if samples:
            spec["samples"] = {k: upload_sample(self.conn, k, v, "samples." + k) for k, v in samples.items()}
        if context:
            spec["context"] = upload_context(self.conn, [context] if isinstance(context, str) else context)
        job_id = submit(self.conn, "/v1/jobs", {"v": 1, "spec": spec})
        with job_context(job_id):
            raw = wait_result(self.conn, job_id, self.wait if wait is None else wait, self.poll_interval)
        return CodeGenEvalResult(raw, self.conn, inputs=in_types, outputs=out_types, samples=list(samples or {}),
                                 poll_interval=self.poll_interval, wait=self.wait)


# RUN_KEYWORDS are result.run()'s own keywords: an input of such a name
# could never be given there.
RUN_KEYWORDS = frozenset(("name", "resources", "retries", "timeout", "env_vars", "secrets", "cache", "wait"))

# SUBMIT_RETRIES is how often a submission that got no answer (the server
# unreachable, or a 503) is sent again, with the same job ID, so the server
# queues it once however often it arrives.
SUBMIT_RETRIES = 3

# SUBMIT_BACKOFF is the first pause before a submission is sent again; it
# doubles (at most 10 s).
SUBMIT_BACKOFF = 1.0


def new_job_id() -> str:
    """A fresh job ID, as the server makes them: time-ordered, then random."""
    return "job-" + datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S") + "-" + _secrets.token_hex(5)


def submit(conn: _http.Connection, path: str, body: Mapping[str, Any]) -> str:
    """POSTs a job (or a run) under a job ID made here and returns the ID.
    A request that got no answer is sent again with the same ID: the
    server answers a known ID with it and queues nothing twice."""
    body = dict(body, job_id=body.get("job_id") or new_job_id())
    for attempt in range(SUBMIT_RETRIES + 1):
        try:
            job_id: str = conn.json("POST", path, body)["job_id"]
            return job_id
        except UnavailableError:
            if attempt == SUBMIT_RETRIES:
                raise
            time.sleep(min(SUBMIT_BACKOFF * 2.0 ** attempt, 10.0))
    raise AssertionError("unreachable: the last attempt returns or raises")


class job_context:
    """Gives every AutoCoderError raised inside it the job's ID (the job goes
    on: result_of follows it, cancel stops it), and cancels nothing."""

    def __init__(self, job_id: str) -> None:
        self.job_id = job_id

    def __enter__(self) -> job_context:
        return self

    def __exit__(self, typ: Optional[type[BaseException]], err: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        if isinstance(err, AutoCoderError) and err.job_id is None:
            err.job_id = self.job_id
            err.args = (("%s (job %s goes on)" % (err.args[0], self.job_id),) + err.args[1:]) if err.args else err.args


def cancel(job_id: str, reason: str = "", url: Optional[str] = None, token: Optional[str] = None) -> CodeGenEvalResult:
    """Cancels a running job (POST /v1/jobs/<id>/cancel; scope submit) and
    returns its result, which says who cancelled it. A job that had
    finished already raises UnavailableError with status 409."""
    conn = _http.Connection(url, token)
    body = {"reason": reason} if reason else None
    return CodeGenEvalResult(conn.json("POST", "/v1/jobs/%s/cancel" % _http.quote(job_id), body), conn)


def upload_sample(conn: _http.Connection, name: str, value: Any, field: str) -> Any:
    """Uploads a sample (a path, a File, a Dir, a DataFrame) and returns its
    object reference. A DataFrame is written to CSV here, without its index."""
    if is_dataframe(value):
        fd, tmp = tempfile.mkstemp(suffix=".csv", prefix="autocoder-")
        os.close(fd)
        try:
            value.to_csv(tmp, index=False)
            return _http.upload(conn, name + ".csv", tmp)
        finally:
            os.remove(tmp)
    if isinstance(value, (File, Dir)) and value.path is None:
        if value.object:
            return value.object  # a result's own file, already in the store
        raise InvalidRequestError("a File with no path", field)
    try:
        path = os.fspath(value)
    except TypeError:
        raise InvalidRequestError("a %s is not a sample: give a path, a File, or a pandas DataFrame"
                                  % type(value).__name__, field) from None
    if os.path.isdir(path):
        return _upload_dir(conn, name, path, field)
    if not os.path.isfile(path):
        raise InvalidRequestError("%s is not a file" % path, field)
    return _http.upload(conn, name + os.path.splitext(path)[1], path)


def _upload_dir(conn: _http.Connection, name: str, path: str, field: str) -> Any:
    """A directory as the tar archive autocoder takes for a Dir input:
    regular files and directories only, sorted, with fixed modes and times."""
    import tarfile

    fd, tmp = tempfile.mkstemp(suffix=".tar", prefix="autocoder-")
    os.close(fd)
    try:
        with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tar:
            for root, dirs, files in os.walk(path):
                dirs.sort()
                for d in dirs:
                    _add(tar, os.path.join(root, d), os.path.relpath(os.path.join(root, d), path), field)
                for f in sorted(files):
                    _add(tar, os.path.join(root, f), os.path.relpath(os.path.join(root, f), path), field)
        return _http.upload(conn, name + ".tar", tmp)
    finally:
        os.remove(tmp)


def _add(tar: Any, full: str, rel: str, field: str) -> None:
    info = tar.gettarinfo(full, arcname=rel.replace(os.sep, "/"))
    if not (info.isfile() or info.isdir()):
        raise InvalidRequestError("%s is not a regular file or directory" % full, field)
    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
    info.mode = 0o755 if info.isdir() else 0o644
    if info.isdir():
        info.name += "/"
        tar.addfile(info)
    else:
        with open(full, "rb") as f:
            tar.addfile(info, f)


def wait_result(conn: _http.Connection, job_id: str, wait: float, poll_interval: float,
                unknown_after: Optional[float] = None) -> dict[str, Any]:
    """Polls the job's result until it is finished: the API answers 202
    with the result so far while the job runs, 404 until the coordinator
    has stored it. A 404 past unknown_after seconds (None: the whole wait,
    for a job this client just submitted) is NotFoundError: no such job."""
    from .errors import NotFoundError

    start = time.monotonic()
    deadline = start + wait
    path = "/v1/jobs/%s/result" % _http.quote(job_id)
    while True:
        pause = poll_interval
        try:
            # The slim view while it runs: the full result so far (its
            # conversation, its data context) is rebuilt for every poll.
            status, headers, raw = conn.request("GET", path + "?view=slim")
            if status != 202:
                result: dict[str, Any] = json.loads(conn.request("GET", path)[2])
                return result
            pause = max(poll_interval, _http.retry_after(headers.get("Retry-After"), 10.0) or 0.0)
        except NotFoundError:
            if unknown_after is not None and time.monotonic() - start >= unknown_after:
                raise
        except UnavailableError:
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise WaitTimeout("job %s did not finish within %gs; it goes on" % (job_id, wait), job_id)
        time.sleep(min(pause, max(0.0, deadline - time.monotonic()) + 0.01))



def result_of(job_id: str, url: Optional[str] = None, token: Optional[str] = None, wait: float = 0.0,
              poll_interval: float = 0.5, outputs: Optional[Iterable[str]] = None) -> CodeGenEvalResult:
    """The result of an existing job (waiting up to wait seconds for it),
    with run() and as_task() like generate's. outputs, the output names in
    their declared order, orders what run() returns: the server keeps the
    spec's outputs by name, so without it they come in alphabetical order.
    A job the server does not know raises NotFoundError (after a few
    seconds when waiting: one just submitted is stored in a moment)."""
    conn = _http.Connection(url, token)
    raw = wait_result(conn, job_id, wait, poll_interval, unknown_after=min(wait, _UNKNOWN_AFTER))
    declared = (raw.get("spec") or {}).get("outputs") or {}
    if outputs is not None:
        names = list(outputs)  # read once: a generator is spent by its first pass
        missing = [n for n in names if n not in declared]
        if missing or len(names) != len(declared):
            raise InvalidRequestError("outputs %s: the job declares %s" % (names, sorted(declared)), "outputs")
        return CodeGenEvalResult(raw, conn, outputs={n: declared[n] for n in names}, poll_interval=poll_interval)
    return CodeGenEvalResult(raw, conn, poll_interval=poll_interval)


# _UNKNOWN_AFTER is how long result_of, when it waits, takes a 404 for a
# job not stored yet.
_UNKNOWN_AFTER = 5.0
