"""Unit tests of the client against a small HTTP server that answers as
autocoder's API does (the end-to-end tests run it against the real one)."""

import datetime
import http.server
import json
import os
import tempfile
import threading
import unittest

import autocoder
from autocoder import (AuthError, AutoCoderAgent, Dir, File, InvalidRequestError, Resources, RunError,
                       UnavailableError)
from autocoder import _http
from autocoder.types import output_value, wire_type


class FakeAPI(http.server.BaseHTTPRequestHandler):
    """Records requests; answers from the server's routes table."""

    def log_message(self, *args):
        pass

    def _answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        self.server.requests.append((self.command, self.path, self.headers.get("Authorization"), body))
        status, reply = self.server.route(self.command, self.path, body)
        data = reply if isinstance(reply, bytes) else json.dumps(reply).encode()
        self.send_response(status)
        if status in (429, 503) and getattr(self.server, "retry_after", None) is not None:
            self.send_header("Retry-After", self.server.retry_after)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _answer


def result(job_id, success=True, outputs=None, spec=None, **extra):
    r = {"v": 1, "job_id": job_id, "status": "succeeded" if success else "failed", "success": success,
         "attempts": 1, "outputs": outputs or {}, "solution": {"language": "python", "code": "print(1)\n"},
         "spec": spec or {}, "error": "" if success else "it broke", "total_input_tokens": 10,
         "total_output_tokens": 5, "total_cost": 0.25}
    r.update(extra)
    return r


class ImageConfig:
    """flyte's ImageConfig's shape."""

    def __init__(self, registry=None, registry_secret=None, python_version=None):
        self.registry, self.registry_secret, self.python_version = registry, registry_secret, python_version


class ClientFixture(unittest.TestCase):
    """A fake API on a port of its own, and an agent that talks to it."""

    def setUp(self):
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeAPI)
        self.srv.requests = []
        self.routes = {}
        self.srv.route = lambda method, path, body: self.routes.get((method, path.split("?")[0]), (404, b"not found"))
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.addCleanup(self.srv.server_close)
        self.addCleanup(self.srv.shutdown)
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        self._backoff, autocoder.agent.SUBMIT_BACKOFF = autocoder.agent.SUBMIT_BACKOFF, 0.0
        self.sample = os.path.join(tempfile.mkdtemp(), "sales.csv")
        with open(self.sample, "w") as f:
            f.write("a,b\n1,2\n")

    def tearDown(self):
        autocoder.agent.SUBMIT_BACKOFF = self._backoff

    def agent(self, **kw):
        return AutoCoderAgent(url=self.url, token="tok", poll_interval=0.01, wait=5, **kw)

    def answer_in_turn(self, prefix, answers):
        """Requests whose path starts with prefix get answers in turn, the
        last one again and again; the others, the routes."""
        route = self.srv.route

        def sequence(method, path, body):
            if path.startswith(prefix):
                return answers.pop(0) if len(answers) > 1 else answers[0]
            return route(method, path, body)

        self.srv.route = sequence

    def sent(self, method, path):
        return [json.loads(b) for m, p, _, b in self.srv.requests if m == method and p.split("?")[0] == path]


class ClientTest(ClientFixture):
    def test_settings_go_with_the_job(self):
        self.routes[("POST", "/v1/samples")] = (201, {"object": "sha256:" + "a" * 64 + ".csv"})
        self.routes[("POST", "/v1/jobs")] = (202, {"v": 1, "job_id": "job-1"})
        spec = {"outputs": {"total": "float", "n": "int"}, "samples": {"sales": "sha256:" + "a" * 64 + ".csv"}}
        self.routes[("GET", "/v1/jobs/job-1/result")] = (200, result("job-1", outputs={"total": 3.5, "n": 2}, spec=spec))

        class Secret:  # flyte.Secret's shape
            key, as_env_var = "db-password", "DB_PASSWORD"

        class ImageConfig:
            python_version = (3, 12)

        agent = self.agent(model="small", name="sales", litellm_params={"temperature": 0.2, "max_tokens": 400},
                           resources=Resources(cpu=2, memory="2Gi"), image_config=ImageConfig(), seed=7,
                           timeout=90, env_vars={"REGION": "north"}, secrets=[Secret(), "API_TOKEN"],
                           system_prompt="Be terse.", sandbox_retries=2, backend="litellm")
        res = agent.generate(prompt="sum", samples={"sales": self.sample}, inputs={"sales": File},
                             outputs={"n": int, "total": float})
        job = self.sent("POST", "/v1/jobs")[0]["spec"]
        self.assertEqual(job["name"], "sales")
        self.assertNotIn("inputs", job)  # a sample is not declared again as an input
        self.assertEqual(job["outputs"], {"n": "int", "total": "float"})
        o = job["options"]
        self.assertEqual((o["model"], o["temperature"], o["max_tokens"], o["seed"]), ("small", 0.2, 400, 7))
        self.assertEqual((o["python"], o["timeout"], o["resources"]), ("3.12", "90s", {"cpu": 2.0, "memory": "2Gi"}))
        self.assertEqual((o["secrets"], o["env_vars"], o["sandbox_retries"]), (["DB_PASSWORD", "API_TOKEN"], {"REGION": "north"}, 2))
        self.assertEqual((o["system_prompt"], o["backend"]), ("Be terse.", "pipeline"))
        for k in ("candidates", "validate", "first_pass", "mutation", "min_test_strength", "strengthen_rounds",
                  "max_mutants", "mutation_budget"):
            self.assertNotIn(k, o)  # left out: the server's defaults
        self.assertTrue(all(auth == "Bearer tok" for _, _, auth, _ in self.srv.requests))
        self.assertTrue(res.success)
        self.assertEqual(res.outputs, {"total": 3.5, "n": 2})
        self.assertEqual(res._values(), (2, 3.5))  # the caller's declared order
        self.assertEqual((res.total_input_tokens, res.total_output_tokens, res.total_cost), (10, 5, 0.25))

    def test_autocoder_settings_go_with_the_job(self):
        self.routes[("POST", "/v1/jobs")] = (202, {"v": 1, "job_id": "job-2"})
        self.routes[("GET", "/v1/jobs/job-2/result")] = (200, result("job-2"))
        agent = self.agent(candidates=3, first_pass="plan_first", mutation="on", min_test_strength=0.9,
                           strengthen_rounds=3, max_mutants=60, mutation_budget=120)
        agent.generate(prompt="sum")
        o = self.sent("POST", "/v1/jobs")[0]["spec"]["options"]
        self.assertEqual((o["candidates"], o["first_pass"], o["mutation"], o["min_test_strength"]), (3, "plan_first", "on", 0.9))
        self.assertEqual((o["strengthen_rounds"], o["max_mutants"], o["mutation_budget"]), (3, 60, "120s"))
        self.routes[("POST", "/v1/jobs")] = (202, {"v": 1, "job_id": "job-3"})
        self.routes[("GET", "/v1/jobs/job-3/result")] = (200, result("job-3"))
        self.agent(validate="run").generate(prompt="sum")
        self.assertEqual(self.sent("POST", "/v1/jobs")[-1]["spec"]["options"]["validate"], "run")

    def test_context_uploaded_as_one_bundle(self):
        ref = "sha256:" + "c" * 64 + ".json"
        self.routes[("POST", "/v1/samples")] = (201, {"object": ref})
        self.routes[("POST", "/v1/jobs")] = (202, {"v": 1, "job_id": "job-ctx"})
        self.routes[("GET", "/v1/jobs/job-ctx/result")] = (200, result("job-ctx"))
        docs = os.path.join(tempfile.mkdtemp(), "docs")
        os.makedirs(os.path.join(docs, ".hidden"))
        for name, text in {"guide.md": "# Guide\nCall load().", "api.html": "<html><head><title>t</title>"
                           "<script>x()</script><body><h2>\n  Load\n</h2><p>load(path)<svg/></p><p>returns rows</p>",
                           "notes.bin": "x", ".hidden/secret.md": "no"}.items():
            with open(os.path.join(docs, name), "w") as f:
                f.write(text)
        self.agent(validate="run").generate(prompt="sum", context=[docs, "sha256:" + "d" * 64 + ".json"])
        spec = self.sent("POST", "/v1/jobs")[0]["spec"]
        self.assertEqual(spec["context"], ["sha256:" + "d" * 64 + ".json", ref])
        (bundle,) = self.sent("POST", "/v1/samples")
        self.assertEqual([f["path"] for f in bundle["files"]], ["docs/api.html", "docs/guide.md"])
        page = bundle["files"][0]["text"]
        self.assertIn("## Load", page)  # a heading kept, on one line
        self.assertIn("returns rows", page)  # the text after a self-closing tag
        self.assertNotIn("x()", page)
        with self.assertRaises(InvalidRequestError) as e:
            self.agent().generate(prompt="sum", context=[os.path.join(docs, "missing")])
        self.assertEqual(e.exception.field, "context")

    def test_refused_before_sending(self):
        cases = [
            (lambda: self.agent(api_key="OPENAI_API_KEY"), "api_key"),
            (lambda: self.agent(api_base="http://x"), "api_base"),
            (lambda: self.agent(block_network=False), "block_network"),
            (lambda: self.agent(backend="gpt"), "backend"),
            (lambda: self.agent(litellm_params={"frequency_penalty": 1}), "litellm_params.frequency_penalty"),
            (lambda: self.agent(resources={"gpu": 1}), "resources"),
            (lambda: self.agent(timeout=-1), "timeout"),
            # Settings the job would ignore are refused, not dropped.
            (lambda: self.agent(backend="agent", max_iterations=5), "max_iterations"),
            (lambda: self.agent(agent_max_turns=20), "agent_max_turns"),
            (lambda: self.agent(backend="litellm", agent_max_turns=20), "agent_max_turns"),
            (lambda: self.agent(image_config={"registry": "ghcr.io/me"}), "image_config.registry"),
            (lambda: self.agent(image_config=ImageConfig(registry_secret="pull")), "image_config.registry_secret"),
            (lambda: self.agent().generate(prompt="p", outputs={"x": complex}), "outputs.x"),
            (lambda: self.agent().generate(prompt="p", inputs={"when": datetime.datetime}), "inputs.when"),
            (lambda: self.agent().generate(prompt="p", samples={"s": 42}), "samples.s"),
            (lambda: self.agent().generate(prompt="p", samples={"s": "/nonexistent.csv"}), "samples.s"),
        ]
        for make, field in cases:
            with self.subTest(field=field):
                with self.assertRaises(InvalidRequestError) as cm:
                    make()
                self.assertEqual(cm.exception.field, field)
                self.assertIsInstance(cm.exception, ValueError)
        self.assertEqual(self.srv.requests, [])

    def test_bounds_go_only_where_they_apply(self):
        self.routes[("POST", "/v1/jobs")] = (202, {"v": 1, "job_id": "job-5"})
        self.routes[("GET", "/v1/jobs/job-5/result")] = (200, result("job-5"))
        for kw, want in [({}, {}), ({"max_iterations": 3}, {"max_iterations": 3}),
                         ({"backend": "agent"}, {}), ({"backend": "claude", "agent_max_turns": 20}, {"agent_max_turns": 20})]:
            with self.subTest(kw=kw):
                self.srv.requests = []
                self.agent(**kw).generate(prompt="p")
                o = self.sent("POST", "/v1/jobs")[0]["spec"]["options"]
                got = {k: o[k] for k in ("max_iterations", "agent_max_turns") if k in o}
                self.assertEqual(got, want)

    def test_server_errors(self):
        self.routes[("POST", "/v1/jobs")] = (400, {"v": 1, "error": "spec.options.temperature: must be between 0 and 2",
                                                    "field": "spec.options.temperature", "kind": "invalid"})
        with self.assertRaises(InvalidRequestError) as cm:
            self.agent(temperature=3).generate(prompt="p")
        self.assertEqual(cm.exception.field, "spec.options.temperature")
        self.routes[("POST", "/v1/jobs")] = (401, b"no token")
        with self.assertRaises(AuthError):
            self.agent().generate(prompt="p")
        self.routes[("POST", "/v1/jobs")] = (503, {"v": 1, "error": "no coordinator", "kind": "unavailable"})
        with self.assertRaises(UnavailableError):
            self.agent().generate(prompt="p")
        with self.assertRaises(UnavailableError):
            AutoCoderAgent(url="http://127.0.0.1:1", token="t").generate(prompt="p")

    def test_waits_through_running_answers(self):
        # The API answers 404 until the coordinator stored the job, then 202
        # with the result so far while it runs, then 200 with the result.
        self.routes[("POST", "/v1/jobs")] = (202, {"v": 1, "job_id": "job-4"})
        answers = [(404, {"error": "job not found", "code": "not_found"}),
                   (202, result("job-4", success=False, status="running", error="")),
                   (200, result("job-4", outputs={"n": 3}))]
        self.answer_in_turn("/v1/jobs/job-4/result", answers)
        res = self.agent().generate(prompt="p", outputs={"n": int})
        self.assertTrue(res.success)
        self.assertEqual(res.outputs, {"n": 3})

    def test_result_of(self):
        # An unknown job is NotFoundError, not a wait that times out.
        with self.assertRaises(autocoder.NotFoundError):
            autocoder.result_of("no-such-job", url=self.url, token="tok")
        # The server keeps the outputs by name: outputs= gives their order.
        spec = {"outputs": {"total_revenue": "float", "total_units": "int", "row_count": "int"}}
        self.routes[("GET", "/v1/jobs/job-9/result")] = (200, result("job-9", spec=spec,
                                                                       outputs={"total_revenue": 1.5, "total_units": 2, "row_count": 3}))
        res = autocoder.result_of("job-9", url=self.url, token="tok")
        self.assertEqual(list(res.declared_outputs), ["row_count", "total_revenue", "total_units"])
        res = autocoder.result_of("job-9", url=self.url, token="tok", outputs=["total_revenue", "total_units", "row_count"])
        self.assertEqual(res._values(), (1.5, 2, 3))
        with self.assertRaises(autocoder.InvalidRequestError):
            autocoder.result_of("job-9", url=self.url, token="tok", outputs=["total_revenue"])

    def test_download_cut_short(self):
        # The server cuts a download whose bytes fail their check midway:
        # an UnavailableError, and no partial file left behind.
        class Short(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Length", "100")
                self.end_headers()
                self.wfile.write(b"only ten b")

            def log_message(self, *args):
                pass

        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Short)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        conn = _http.Connection("http://127.0.0.1:%d" % srv.server_address[1], "tok")
        f = File(name="out.csv", object="sha256:" + "b" * 64, size=100, _fetch=lambda out: conn.stream_to("/x", out))
        dest = tempfile.mkdtemp()
        with self.assertRaises(autocoder.UnavailableError):
            f.download(dest)
        self.assertEqual(os.listdir(dest), [])

    def test_json_errors_by_status(self):
        # Every error answer is JSON ({"error", "code", "field"}): the status
        # picks the class, the message is the body's.
        for status, code, cls in [(401, "unauthorized", AuthError), (403, "forbidden", AuthError),
                                  (413, "too_large", InvalidRequestError), (503, "unavailable", UnavailableError)]:
            with self.subTest(status=status):
                self.routes[("POST", "/v1/jobs")] = (status, {"error": "said " + code, "code": code})
                with self.assertRaises(cls) as cm:
                    self.agent().generate(prompt="p")
                self.assertIn("said " + code, str(cm.exception))

    def test_dataframe_without_pandas(self):
        written = []

        class DataFrame:  # duck-typed as pandas': to_csv without the index
            def to_csv(self, path, index=True):
                written.append(index)
                with open(path, "w") as f:
                    f.write("a\n1\n")

        DataFrame.__module__ = "pandas.core.frame"
        self.routes[("POST", "/v1/samples")] = (201, {"object": "sha256:" + "b" * 64 + ".csv"})
        self.routes[("POST", "/v1/jobs")] = (202, {"v": 1, "job_id": "job-2"})
        self.routes[("GET", "/v1/jobs/job-2/result")] = (200, result("job-2"))
        self.agent().generate(prompt="p", samples={"sales": DataFrame()})
        self.assertEqual(written, [False])
        uploads = [p for m, p, _, _ in self.srv.requests if p.startswith("/v1/samples")]
        self.assertEqual(uploads, ["/v1/samples?name=sales.csv"])

    def test_run_and_task(self):
        spec = {"outputs": {"total": "float"}, "inputs": {"threshold": "float"}, "samples": {"sales": "x"}}
        self.routes[("POST", "/v1/jobs")] = (202, {"v": 1, "job_id": "job-3"})
        self.routes[("GET", "/v1/jobs/job-3/result")] = (200, result("job-3", outputs={"total": 1.0}, spec=spec))
        res = self.agent().generate(prompt="p", inputs={"threshold": float}, outputs={"total": float})
        self.routes[("POST", "/v1/jobs/job-3/run")] = (202, {"v": 1, "job_id": "run-1"})
        self.routes[("GET", "/v1/jobs/run-1/result")] = (200, result("run-1", outputs={"total": 9.5}, spec=spec))
        self.assertEqual(res.run(threshold=2.5, timeout=5, resources={"memory": "256Mi"}, retries=1), 9.5)
        body = self.sent("POST", "/v1/jobs/job-3/run")[0]
        self.assertRegex(body.pop("job_id"), r"^job-\d{8}-\d{6}-[0-9a-f]{10}$")  # made here: a retry submits once
        self.assertEqual(body, {"args": {"threshold": "2.5"}, "options": {"timeout": "5s", "resources": {"memory": "256Mi"}, "retries": 1}})
        with self.assertRaises(InvalidRequestError) as cm:
            res.run(nope=1)
        self.assertEqual(cm.exception.field, "run.args.nope")
        with self.assertRaises(InvalidRequestError) as cm:
            res.run(name="sandbox-1")  # the reference's sandbox name: nothing here would use it
        self.assertEqual(cm.exception.field, "name")

        self.routes[("POST", "/v1/tasks/monthly")] = (201, {"name": "monthly", "job_id": "job-3", "defaults": {"timeout": "30s"}})
        task = res.as_task("monthly", timeout=30, env_vars={"A": "1"})
        self.assertEqual(self.sent("POST", "/v1/tasks/monthly")[0], {"job_id": "job-3", "defaults": {"timeout": "30s", "env_vars": {"A": "1"}}})
        self.routes[("POST", "/v1/tasks/monthly/run")] = (202, {"v": 1, "job_id": "run-2"})
        self.routes[("GET", "/v1/jobs/run-2/result")] = (200, result("run-2", success=False, spec=spec))
        with self.assertRaises(RunError) as cm:
            task(threshold=1)
        self.assertEqual(cm.exception.result.error, "it broke")

        failed = self.agent()
        self.routes[("GET", "/v1/jobs/job-3/result")] = (200, result("job-3", success=False, spec=spec))
        bad = failed.generate(prompt="p")
        self.assertFalse(bad.success)
        with self.assertRaises(InvalidRequestError):
            bad.run()

    def test_types(self):
        self.assertEqual([wire_type(t, "f", autocoder.types.OUTPUT_TYPES) for t in
                          (float, int, str, bool, datetime.datetime, datetime.timedelta, File, Dir, "float")],
                         ["float", "int", "str", "bool", "datetime", "timedelta", "File", "Dir", "float"])
        self.assertEqual(output_value("datetime", "2024-05-01T13:30:00Z", None, "d"),
                         datetime.datetime(2024, 5, 1, 13, 30, tzinfo=datetime.timezone.utc))
        self.assertEqual(output_value("timedelta", "PT1H30M", None, "d"), datetime.timedelta(hours=1, minutes=30))
        self.assertEqual(output_value("timedelta", 90.0, None, "d"), datetime.timedelta(seconds=90))
        self.assertEqual(output_value("int", 3.0, None, "n"), 3)
        f = output_value("File", {"object": "sha256:" + "c" * 64, "size": 3}, lambda n: (lambda out: out.write(b"abc")), "report")
        d = tempfile.mkdtemp()
        with open(f.download(d)) as got:
            self.assertEqual(got.read(), "abc")
        self.assertEqual(os.path.basename(f.path), "report")

    def test_token_never_in_repr(self):
        a = self.agent()
        self.assertNotIn("tok", repr(a.conn))


if __name__ == "__main__":
    unittest.main()


class RobustnessTest(ClientFixture):
    """What a client needs from a real network: waiting cheaply, submitting
    once however often it retries, waiting out a busy server, not following
    redirects with its token, and saying which job goes on."""

    def test_polls_slim_then_fetches_the_result_once(self):
        self.routes[("POST", "/v1/jobs")] = (202, {"v": 1, "job_id": "job-5"})
        answers = [(202, result("job-5", success=False, status="running", error="")), (200, result("job-5"))]
        self.answer_in_turn("/v1/jobs/job-5/result", answers)
        self.agent().generate(prompt="p")
        gets = [p for m, p, _, _ in self.srv.requests if m == "GET"]
        self.assertEqual(gets, ["/v1/jobs/job-5/result?view=slim", "/v1/jobs/job-5/result?view=slim", "/v1/jobs/job-5/result"])

    def test_submit_retried_with_the_same_job_id(self):
        answers = [(503, {"v": 1, "error": "no coordinator answered", "kind": "unavailable"}), (202, {"v": 1, "job_id": "x"})]
        route = self.srv.route

        def sequence(method, path, body):
            if method == "POST" and path == "/v1/jobs":
                status, reply = answers.pop(0)
                if status == 202:
                    reply = {"v": 1, "job_id": json.loads(body)["job_id"]}
                return status, reply
            if method == "GET" and path.startswith("/v1/jobs/job-"):
                return 200, result(path.split("/")[3])
            return route(method, path, body)

        self.srv.route = sequence
        self.assertTrue(self.agent().generate(prompt="p").success)
        ids = [b["job_id"] for b in self.sent("POST", "/v1/jobs")]
        self.assertEqual(len(ids), 2)
        self.assertEqual(ids[0], ids[1])

    def test_inputs_named_like_run_settings_refused(self):
        for name in ("timeout", "cache", "wait", "secrets"):
            with self.assertRaises(InvalidRequestError) as cm:
                self.agent().generate(prompt="p", inputs={name: int})
            self.assertEqual(cm.exception.field, "inputs." + name)
        self.assertEqual(self.sent("POST", "/v1/jobs"), [])

    def test_redirect_not_followed_with_the_token(self):
        other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeAPI)
        other.requests, other.route = [], lambda m, p, b: (200, {"v": 1, "job_id": "stolen"})
        threading.Thread(target=other.serve_forever, daemon=True).start()
        self.addCleanup(other.server_close)
        self.addCleanup(other.shutdown)

        class Redirect(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.send_response(302)
                self.send_header("Location", "http://127.0.0.1:%d/v1/jobs" % other.server_address[1])
                self.send_header("Content-Length", "0")
                self.end_headers()

        redirecting = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
        threading.Thread(target=redirecting.serve_forever, daemon=True).start()
        self.addCleanup(redirecting.server_close)
        self.addCleanup(redirecting.shutdown)
        agent = AutoCoderAgent(url="http://127.0.0.1:%d" % redirecting.server_address[1], token="secret-token", wait=1)
        with self.assertRaises(UnavailableError) as cm:
            agent.generate(prompt="p")
        self.assertIn("redirect", str(cm.exception))
        self.assertEqual(other.requests, [], "the redirect was followed")

    def test_busy_upload_waited_out(self):
        answers = [(503, {"error": "4 sample uploads are in progress: retry", "code": "unavailable"}),
                   (201, {"object": "sha256:" + "b" * 64 + ".csv"})]
        self.answer_in_turn("/v1/samples", answers)
        self.srv.retry_after = "0"
        self.routes[("POST", "/v1/jobs")] = (202, {"v": 1, "job_id": "job-6"})
        self.routes[("GET", "/v1/jobs/job-6/result")] = (200, result("job-6"))
        res = self.agent().generate(prompt="p", samples={"sales": self.sample})
        self.assertTrue(res.success)
        self.assertEqual(len([1 for m, p, _, _ in self.srv.requests if p.startswith("/v1/samples")]), 2)

    def test_errors_after_submit_name_the_job(self):
        self.routes[("POST", "/v1/jobs")] = (202, {"v": 1, "job_id": "job-7"})
        self.routes[("GET", "/v1/jobs/job-7/result")] = (507, {"error": "the store is full", "code": "unavailable"})
        with self.assertRaises(UnavailableError) as cm:
            self.agent().generate(prompt="p", wait=0.05)
        err = cm.exception
        self.assertEqual((err.job_id, err.status, err.code), ("job-7", 507, "unavailable"))
        self.assertIn("job-7", str(err))
