"""The result of generate(...), with run(...) and as_task(...), and Task."""

from . import _http
from .errors import InvalidRequestError, RunError
from .types import File, arg_value, output_value


class Solution:
    """The generated script: language, code, packages, system_packages."""

    def __init__(self, raw):
        raw = raw or {}
        self.language = raw.get("language", "python")
        self.code = raw.get("code", "")
        self.packages = raw.get("packages") or []
        self.system_packages = raw.get("system_packages") or []

    def __repr__(self):
        return "Solution(%d lines, packages=%r)" % (self.code.count("\n"), self.packages)


class Plan:
    def __init__(self, raw):
        self.description = raw.get("description", "")
        self.approach = raw.get("approach", "")


class CodeGenEvalResult:
    """A job's result, with the reference's fields: success, solution,
    tests, outputs (typed values of the acceptance run), output,
    exit_code, error, attempts, image, detected_packages,
    detected_system_packages, generated_schemas, data_context,
    conversation_history, total_input_tokens, total_output_tokens,
    total_cost (cost_by_model), declared_inputs, declared_outputs and
    original_samples (name -> File, downloadable). raw is the whole result
    object (docs/api.md). run() and as_task() run the script again."""

    def __init__(self, raw, conn, inputs=None, outputs=None, samples=None, poll_interval=0.5, wait=1800.0):
        self.raw = raw
        self._conn = conn
        self._poll, self._wait = poll_interval, wait
        spec = raw.get("spec") or {}
        self.job_id = raw.get("job_id")
        self.status = raw.get("status")
        self.success = bool(raw.get("success"))
        self.solution = Solution(raw.get("solution"))
        self.plan = Plan(raw["plan"]) if raw.get("plan") else None
        self.tests = raw.get("tests") or None
        self.output = raw.get("output", "")
        self.exit_code = raw.get("exit_code", 0)
        self.error = raw.get("error") or None
        self.attempts = raw.get("attempts", 0)
        self.image = raw.get("image") or None
        self.detected_packages = raw.get("detected_packages") or []
        self.detected_system_packages = raw.get("detected_system_packages") or []
        self.generated_schemas = raw.get("generated_schemas") or None
        self.data_context = raw.get("data_context") or None
        self.conversation_history = raw.get("conversation_history") or []
        self.total_input_tokens = raw.get("total_input_tokens", 0)
        self.total_output_tokens = raw.get("total_output_tokens", 0)
        self.total_cost = raw.get("total_cost", 0.0)
        self.cost_by_model = raw.get("cost_by_model") or {}
        # The declared order is the caller's (a JSON object from the server has none).
        self.declared_outputs = dict(outputs) if outputs else dict(sorted((spec.get("outputs") or {}).items()))
        self.declared_inputs = dict(inputs) if inputs is not None else dict(spec.get("inputs") or {})
        self._sample_names = list(samples) if samples else sorted(spec.get("samples") or {})
        self.outputs = self._typed(raw.get("outputs") or {})
        self.original_samples = {
            s["name"]: File(name=s.get("file_name") or s["name"], object=s.get("object"), size=s.get("size"),
                            _fetch=self._fetcher("samples", s["name"]))
            for s in raw.get("original_samples") or []
        } or None

    def _fetcher(self, kind, name):
        path = "/v1/jobs/%s/%s/%s" % (_http.quote(self.job_id), kind, _http.quote(name))
        return lambda out: self._conn.stream_to(path, out)

    def _typed(self, values):
        return {k: output_value(self.declared_outputs.get(k), v, lambda n: self._fetcher("outputs", n), k)
                for k, v in values.items()}

    def __repr__(self):
        return "CodeGenEvalResult(job_id=%r, success=%r, attempts=%r, error=%r)" % (
            self.job_id, self.success, self.attempts, self.error)

    def _values(self):
        """The outputs in their declared order: one value, or a tuple."""
        vals = tuple(self.outputs.get(k) for k in self.declared_outputs)
        return vals[0] if len(vals) == 1 else vals

    def _check_runnable(self):
        if not self.success:
            raise InvalidRequestError("cannot run a failed code generation (%s)" % self.error, "result")

    def run(self, *, name=None, resources=None, retries=None, timeout=None, env_vars=None, secrets=None,
            cache=None, wait=None, **overrides):
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

    def _run_body(self, overrides):
        from .agent import upload_sample

        args, files = {}, {}
        for k, v in overrides.items():
            field = "run.args." + k
            if k in self._sample_names or self.declared_inputs.get(k) in ("File", "Dir"):
                files[k] = upload_sample(self._conn, k, v, "run.samples." + k)
            elif k in self.declared_inputs:
                args[k] = arg_value(v, field)
            else:
                raise InvalidRequestError("the job has no input or sample %s (inputs: %s; samples: %s)" % (
                    k, ", ".join(self.declared_inputs) or "none", ", ".join(self._sample_names) or "none"), field)
        body = {}
        if args:
            body["args"] = args
        if files:
            body["samples"] = files
        return body

    def _finish(self, run_id, wait):
        from .agent import job_context, wait_result

        with job_context(run_id):
            raw = wait_result(self._conn, run_id, self._wait if wait is None else wait, self._poll)
        run = CodeGenEvalResult(raw, self._conn, inputs=self.declared_inputs, outputs=self.declared_outputs,
                                samples=self._sample_names, poll_interval=self._poll, wait=self._wait)
        if not run.success:
            raise RunError("run %s failed: %s" % (run_id, run.error), run)
        return run._values()

    def as_task(self, name="run_code_on_real_data", resources=None, retries=None, timeout=None, env_vars=None,
                secrets=None, cache=None, description=None):
        """Keeps the script as a named task on the server, with these
        settings as the defaults of its runs, and returns it: call it with
        input values (the job's samples are the defaults) to run it."""
        from .agent import run_options

        self._check_runnable()
        body = {"job_id": self.job_id}
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

    def __init__(self, raw, result):
        self.raw = raw
        self.name = raw["name"]
        self.job_id = raw["job_id"]
        self.defaults = raw.get("defaults") or {}
        self._result = result

    def __repr__(self):
        return "Task(%r, job_id=%r)" % (self.name, self.job_id)

    def __call__(self, **inputs):
        return self.run(**inputs)

    def run(self, *, resources=None, retries=None, timeout=None, env_vars=None, secrets=None, cache=None,
            wait=None, **inputs):
        """Runs the task with inputs; the settings are laid over the task's defaults."""
        from .agent import run_options, submit

        r = self._result
        body = r._run_body(inputs)
        opts = run_options(resources, retries, timeout, env_vars, secrets, cache)
        if opts:
            body["options"] = opts
        return r._finish(submit(r._conn, "/v1/tasks/%s/run" % _http.quote(self.name), body), wait)
