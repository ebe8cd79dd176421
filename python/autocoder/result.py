"""The result of generate(...), with run(...) and as_task(...), and Task."""

from __future__ import annotations

from typing import IO, Any, Callable, Iterable, Mapping, Optional, Union

from . import _http
from .errors import InvalidRequestError, RunError
from .types import Fetch, File, arg_value, output_value


class Solution:
    """The generated script: language, code, packages, system_packages."""

    def __init__(self, raw: Optional[Mapping[str, Any]]) -> None:
        raw = raw or {}
        self.language: str = raw.get("language", "python")
        self.code: str = raw.get("code", "")
        self.packages: list[str] = raw.get("packages") or []
        self.system_packages: list[str] = raw.get("system_packages") or []

    def __repr__(self) -> str:
        return "Solution(%d lines, packages=%r)" % (self.code.count("\n"), self.packages)


class Plan:
    """The plan the model wrote first: description and approach."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.description: str = raw.get("description", "")
        self.approach: str = raw.get("approach", "")


class CodeGenEvalResult:
    """A job's result, with the reference's fields: success, solution,
    tests, outputs (typed values of the acceptance run), output,
    exit_code, error, attempts, image, detected_packages,
    detected_system_packages, generated_schemas, data_context,
    conversation_history, total_input_tokens, total_output_tokens,
    total_cost (cost_by_model), declared_inputs, declared_outputs and
    original_samples (name -> File, downloadable). raw is the whole result
    object (docs/api.md). run() and as_task() run the script again."""

    def __init__(self, raw: dict[str, Any], conn: _http.Connection, inputs: Optional[Mapping[str, str]] = None,
                 outputs: Optional[Mapping[str, str]] = None, samples: Optional[Iterable[str]] = None,
                 poll_interval: float = 0.5, wait: float = 1800.0) -> None:
        self.raw = raw
        self._conn = conn
        self._poll, self._wait = poll_interval, wait
        spec = raw.get("spec") or {}
        self.job_id: str = raw.get("job_id") or ""
        self.status: Optional[str] = raw.get("status")
        self.success = bool(raw.get("success"))
        self.solution = Solution(raw.get("solution"))
        self.plan = Plan(raw["plan"]) if raw.get("plan") else None
        self.tests: Optional[str] = raw.get("tests") or None
        self.output: str = raw.get("output", "")
        self.exit_code: int = raw.get("exit_code", 0)
        self.error: Optional[str] = raw.get("error") or None
        self.attempts: int = raw.get("attempts", 0)
        self.image: Optional[str] = raw.get("image") or None
        self.detected_packages: list[str] = raw.get("detected_packages") or []
        self.detected_system_packages: list[str] = raw.get("detected_system_packages") or []
        self.generated_schemas: Optional[dict[str, Any]] = raw.get("generated_schemas") or None
        self.data_context: Optional[str] = raw.get("data_context") or None
        self.conversation_history: list[dict[str, Any]] = raw.get("conversation_history") or []
        self.total_input_tokens: int = raw.get("total_input_tokens", 0)
        self.total_output_tokens: int = raw.get("total_output_tokens", 0)
        self.total_cost: float = raw.get("total_cost", 0.0)
        self.cost_by_model: dict[str, float] = raw.get("cost_by_model") or {}
        # The declared order is the caller's (a JSON object from the server has none).
        self.declared_outputs: dict[str, str] = dict(outputs) if outputs else dict(sorted((spec.get("outputs") or {}).items()))
        self.declared_inputs: dict[str, str] = dict(inputs) if inputs is not None else dict(spec.get("inputs") or {})
        self._sample_names = list(samples) if samples else sorted(spec.get("samples") or {})
        self.outputs = self._typed(raw.get("outputs") or {})
        self.original_samples: Optional[dict[str, File]] = {
            s["name"]: File(name=s.get("file_name") or s["name"], object=s.get("object"), size=s.get("size"),
                            _fetch=self._fetcher("samples", s["name"]))
            for s in raw.get("original_samples") or []
        } or None

    def _fetcher(self, kind: str, name: str) -> Fetch:
        path = "/v1/jobs/%s/%s/%s" % (_http.quote(self.job_id), kind, _http.quote(name))

        def fetch(out: IO[bytes]) -> None:
            self._conn.stream_to(path, out)

        return fetch

    def _typed(self, values: Mapping[str, Any]) -> dict[str, Any]:
        return {k: output_value(self.declared_outputs.get(k), v, lambda n: self._fetcher("outputs", n), k)
                for k, v in values.items()}

    def __repr__(self) -> str:
        return "CodeGenEvalResult(job_id=%r, success=%r, attempts=%r, error=%r)" % (
            self.job_id, self.success, self.attempts, self.error)

    def _values(self) -> Any:
        """The outputs in their declared order: one value, or a tuple."""
        vals = tuple(self.outputs.get(k) for k in self.declared_outputs)
        return vals[0] if len(vals) == 1 else vals

    def _check_runnable(self) -> None:
        if not self.success:
            raise InvalidRequestError("cannot run a failed code generation (%s)" % self.error, "result")

    def run(self, *, name: Optional[str] = None, resources: Any = None, retries: Optional[int] = None,
            timeout: Optional[Union[float, str]] = None, env_vars: Optional[Mapping[str, Any]] = None,
            secrets: Any = None, cache: Optional[str] = None, wait: Optional[float] = None, **overrides: Any) -> Any:
        """Runs the script once more, on the job's samples unless overrides
        name others (a path, a File, a DataFrame), with overrides as input
        values; the settings (resources, retries, timeout, env_vars,
        secrets, cache) are laid over the job's. Returns the outputs in
        their declared order (one output: its value). A run that fails
        raises RunError with its result. name, the reference's sandbox
        name, is refused: runs here are named by their job ID."""
        from .agent import run_options, submit

        if name is not None:
            raise InvalidRequestError("a run is named by its job ID here; leave name out", "name")
        self._check_runnable()
        body = self._run_body(overrides)
        opts = run_options(resources, retries, timeout, env_vars, secrets, cache)
        if opts:
            body["options"] = opts
        return self._finish(submit(self._conn, "/v1/jobs/%s/run" % _http.quote(self.job_id), body), wait)

    def _run_body(self, overrides: Mapping[str, Any]) -> dict[str, Any]:
        from .agent import upload_sample

        args: dict[str, str] = {}
        files: dict[str, Any] = {}
        for k, v in overrides.items():
            field = "run.args." + k
            if k in self._sample_names or self.declared_inputs.get(k) in ("File", "Dir"):
                files[k] = upload_sample(self._conn, k, v, "run.samples." + k)
            elif k in self.declared_inputs:
                args[k] = arg_value(v, field)
            else:
                raise InvalidRequestError("the job has no input or sample %s (inputs: %s; samples: %s)" % (
                    k, ", ".join(self.declared_inputs) or "none", ", ".join(self._sample_names) or "none"), field)
        body: dict[str, Any] = {}
        if args:
            body["args"] = args
        if files:
            body["samples"] = files
        return body

    def _finish(self, run_id: str, wait: Optional[float]) -> Any:
        from .agent import job_context, wait_result

        with job_context(run_id):
            raw = wait_result(self._conn, run_id, self._wait if wait is None else wait, self._poll)
        run = CodeGenEvalResult(raw, self._conn, inputs=self.declared_inputs, outputs=self.declared_outputs,
                                samples=self._sample_names, poll_interval=self._poll, wait=self._wait)
        if not run.success:
            raise RunError("run %s failed: %s" % (run_id, run.error), run)
        return run._values()

    def as_task(self, name: str = "run_code_on_real_data", resources: Any = None, retries: Optional[int] = None,
                timeout: Optional[Union[float, str]] = None, env_vars: Optional[Mapping[str, Any]] = None, secrets: Any = None,
                cache: Optional[str] = None, description: Optional[str] = None) -> Task:
        """Keeps the script as a named task on the server, with these
        settings as the defaults of its runs, and returns it: call it with
        input values (the job's samples are the defaults) to run it."""
        from .agent import run_options

        self._check_runnable()
        body: dict[str, Any] = {"job_id": self.job_id}
        if description:
            body["description"] = description
        defaults = run_options(resources, retries, timeout, env_vars, secrets, cache)
        if defaults:
            body["defaults"] = defaults
        raw = self._conn.json("POST", "/v1/tasks/%s" % _http.quote(name), body)
        return Task(raw, self)


class Task:
    """A named task: a finished job's script, run by name. Calling it runs
    it with keyword inputs (as result.run does) and returns the outputs."""

    def __init__(self, raw: dict[str, Any], result: CodeGenEvalResult) -> None:
        self.raw = raw
        self.name: str = raw["name"]
        self.job_id: str = raw["job_id"]
        self.defaults: dict[str, Any] = raw.get("defaults") or {}
        self._result = result

    def __repr__(self) -> str:
        return "Task(%r, job_id=%r)" % (self.name, self.job_id)

    def __call__(self, **inputs: Any) -> Any:
        return self.run(**inputs)

    def run(self, *, resources: Any = None, retries: Optional[int] = None, timeout: Optional[Union[float, str]] = None,
            env_vars: Optional[Mapping[str, Any]] = None, secrets: Any = None, cache: Optional[str] = None,
            wait: Optional[float] = None, **inputs: Any) -> Any:
        """Runs the task with inputs; the settings are laid over the task's defaults."""
        from .agent import run_options, submit

        r = self._result
        body = r._run_body(inputs)
        opts = run_options(resources, retries, timeout, env_vars, secrets, cache)
        if opts:
            body["options"] = opts
        return r._finish(submit(r._conn, "/v1/tasks/%s/run" % _http.quote(self.name), body), wait)
