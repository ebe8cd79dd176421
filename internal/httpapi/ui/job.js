// The job page: the result object so far (GET v1/jobs/<id>), the
// iteration log with diffs (GET v1/jobs/<id>/iterations), and, while the
// job runs, its events over SSE, resumed from the last event id after a
// dropped connection.
import { $, h, api, authHeaders, can, saveBlob, fmtTime, fmtMS, fmtInt, durationOf, statusEl, pre, diffEl, keepDetails } from "./dom.js";
import { codePre } from "./highlight.js";
import { activitySection } from "./activity.js";

let live = null; // the job being shown: { id, source, lastId, running, timers }

export function stopJob() {
  if (!live) return;
  live.stopped = true;
  if (live.source) live.source.close();
  for (const t of live.timers) clearTimeout(t);
  clearInterval(live.ticker);
  for (const url of live.charts.values()) url.then((u) => u && URL.revokeObjectURL(u));
  live = null;
}

export async function showJob(id) {
  live = { id, source: null, lastId: 0, running: new Map(), timers: [], stopped: false, res: null, its: [], tab: null, retry: 0,
    charts: new Map() }; // a chart's object -> its blob URL (a promise), fetched once per page
  const me = live;
  me.canSubmit = await can("submit"); // Cancel, Rerun and Edit only for a token that may submit
  if (me.stopped) return;
  await refresh(me);
  if (me.stopped) return;
  if (me.res && me.res.status === "running") {
    connect(me);
    me.ticker = setInterval(() => renderRunning(me), 1000); // the running stages' ages
  }
}

const path = (id) => "v1/jobs/" + encodeURIComponent(id);

// refresh reads the job and its iterations and draws the page, unless
// another page was opened meanwhile: every await is a point where the
// route may have changed, so the check comes after the last one.
async function refresh(me) {
  const [r, it] = await Promise.all([api(path(me.id)), api(path(me.id) + "/iterations")]);
  if (!r.ok) {
    const why = r.status === 404 ? "No job " + me.id + "." : "The job is not available: " + r.status + " " + (await r.text());
    if (!me.stopped) $("view").replaceChildren(h("section", {}, h("p", { class: "error-text", id: "job-error" }, why)));
    return;
  }
  const [res, its] = await Promise.all([r.json(), it.ok ? it.json() : []]);
  if (me.stopped) return;
  me.res = res;
  me.its = its;
  render(me);
}

// refreshSoon coalesces the refreshes that a burst of events asks for.
function refreshSoon(me) {
  if (me.pending) return;
  me.pending = true;
  me.timers.push(setTimeout(() => { me.pending = false; refresh(me); }, 250));
}

// ---- live events ----

async function connect(me) {
  // EventSource sends no Authorization header: a ticket good for this
  // job's events and a few seconds goes in the URL instead of the token.
  // A server out of reach makes fetch throw: try again later, as for an
  // answer that is not a ticket, or the stream would stay down for good.
  let ticket = "";
  try {
    const tr = await api(path(me.id) + "/ticket", { method: "POST" });
    if (me.stopped) return;
    if (tr.ok) ticket = (await tr.json()).ticket;
    else if (tr.status !== 404) { reconnectLater(me); return; }
  } catch (err) {
    if (!me.stopped) reconnectLater(me);
    return;
  }
  if (me.stopped) return;
  const q = new URLSearchParams();
  if (ticket) q.set("ticket", ticket);
  if (me.lastId) q.set("last_event_id", String(me.lastId));
  const src = new EventSource(path(me.id) + "/events?" + q);
  me.source = src;
  setLive(me, "connecting");
  src.onopen = () => { me.retry = 0; setLive(me, "live"); };
  const onEvent = (e) => {
    if (e.lastEventId) me.lastId = Number(e.lastEventId);
    const ev = JSON.parse(e.data);
    inFlight(me, ev);
    if (ev.type === "stage_finished") refreshSoon(me);
    renderRunning(me);
  };
  for (const t of ["job_started", "stage_queued", "stage_started", "stage_finished", "job_finished"]) src.addEventListener(t, onEvent);
  src.addEventListener("result", (e) => {
    src.close(); me.source = null;
    me.res = JSON.parse(e.data);
    setLive(me, "finished");
    refresh(me);
  });
  src.onerror = () => {
    // The browser would reconnect with the same, soon expired, ticket:
    // reconnect ourselves with a new one, after the last event seen.
    src.close(); me.source = null;
    if (!me.stopped && me.res && me.res.status === "running") reconnectLater(me);
  };
}

function reconnectLater(me) {
  me.retry = Math.min(me.retry + 1, 5);
  setLive(me, "reconnecting");
  me.timers.push(setTimeout(() => { if (!me.stopped) connect(me); }, 500 * 2 ** me.retry));
}

function setLive(me, state) {
  me.liveState = state;
  const el = $("live");
  if (el) { el.textContent = state; el.dataset.state = state; el.className = "badge" + (state === "live" ? " live" : ""); }
}

// inFlight keeps the stages in flight from the events: queued from
// stage_queued (the coordinator dispatched it), running from
// stage_started (a worker took it), gone at stage_finished.
function inFlight(me, ev) {
  const seen = me.running.get(ev.seq) || { seq: ev.seq, stage: ev.stage, iteration: ev.iteration };
  switch (ev.type) {
    case "stage_queued":
      me.running.set(ev.seq, Object.assign(seen, { queuedAt: ev.time }));
      break;
    case "stage_started":
      me.running.set(ev.seq, Object.assign(seen, { startedAt: ev.time, worker: ev.worker || "" }));
      break;
    case "stage_finished":
      me.running.delete(ev.seq);
      break;
    case "job_finished":
      me.running.clear();
  }
}

// waitText says how long a stage in flight has waited and run:
// "queued for 5 s" or "running for 1 s on llm-1 (queued 5 s)".
function waitText(st) {
  if (!st.startedAt) return "queued for " + fmtMS(durationOf(st.queuedAt));
  const queued = st.queuedAt ? " (queued " + fmtMS(Math.max(0, new Date(st.startedAt) - new Date(st.queuedAt))) + ")" : "";
  return "running for " + fmtMS(durationOf(st.startedAt)) + (st.worker ? " on " + st.worker : "") + queued;
}

function renderRunning(me) {
  const el = $("running");
  if (!el) return;
  const items = [...me.running.values()].sort((a, b) => a.seq - b.seq).map((st) =>
    h("li", { "data-stage": st.stage, "data-state": st.startedAt ? "running" : "queued" },
      h("b", {}, st.stage), st.iteration ? " (iteration " + st.iteration + ")" : "",
      " ", h("span", { class: "badge " + (st.startedAt ? "live" : "queued") }, st.startedAt ? "running" : "queued"),
      h("span", { class: "muted" }, " " + waitText(st))));
  el.replaceChildren(...(items.length ? items : [h("li", { class: "muted" }, me.res && me.res.status === "running" ? "waiting for the next stage" : "nothing: the job is over")]));
  // The timeline shows the stages in flight too: drawn again when one is
  // queued, starts or ends.
  const sig = [...me.running.values()].map((st) => st.seq + (st.startedAt ? "r" : "q")).join(",");
  const tl = $("timeline-section");
  if (tl && me.res && sig !== me.timelineSig) {
    me.timelineSig = sig;
    tl.replaceWith(timeline(me.res, me));
  }
}

// ---- rendering ----

function render(me) {
  const r = me.res;
  const spec = r.spec || {};
  const running = r.status === "running";
  const head = h("section", { id: "job" },
    h("div", { class: "jobhead" },
      h("h2", { id: "job-name" }, spec.name || r.job_id), h("span", { class: "mono muted", id: "job-id" }, r.job_id),
      h("span", { id: "job-status" }, statusEl(r.status)),
      running ? h("span", { class: "badge", id: "live" }, me.liveState || "connecting") : null,
      h("div", { class: "actions" },
        running && me.canSubmit ? h("button", { id: "cancel", onclick: () => act(me, "cancel") }, "Cancel") : null,
        me.canSubmit ? h("button", { id: "rerun", onclick: () => act(me, "rerun") }, "Rerun") : null,
        me.canSubmit && r.spec ? h("a", { class: "button", id: "edit", href: "#/new?from=" + encodeURIComponent(r.job_id) }, "Edit and launch") : null,
        // The last button's answer outlives a re-render (a cancel refreshes the page).
        me.answer ? h("span", { class: me.answer.cls, id: "action-answer", "data-done": "1" }, me.answer.text)
          : h("span", { class: "answer", id: "action-answer" }))),
    spec.prompt ? h("p", { id: "job-prompt" }, spec.prompt) : null,
    r.error ? h("p", { class: "error-text", id: "job-error" }, r.error) : null,
    h("div", { class: "facts" },
      fact("Submitted", fmtTime(r.submitted_at)), fact("Finished", fmtTime(r.finished_at)),
      fact("Duration", fmtMS(durationOf(r.submitted_at, r.finished_at))), fact("Iterations", String(r.attempts)),
      fact("Tokens in / out", fmtInt(r.total_input_tokens) + " / " + fmtInt(r.total_output_tokens)),
      fact("Model calls", fmtInt(r.llm_calls)), fact("Cache hits", fmtInt(r.cache_hits), "cache-hits"),
      fact("Image", r.image || "—", "job-image")),
    r.cancelled ? h("p", { id: "job-cancelled" }, "Cancelled by ", h("b", {}, r.cancelled.by), " at " + fmtTime(r.cancelled.at),
      r.cancelled.reason ? ": " + r.cancelled.reason : "") : null,
    downloads(r));
  keepDetails($("view"), () => $("view").replaceChildren(...[
    h("p", {}, h("a", { href: "#/" }, "← all jobs")),
    head,
    running ? h("section", {}, h("h2", {}, "Running now"), h("ul", { id: "running" })) : null,
    timeline(r, me),
    // A code-mode job has no plan, tests or typed outputs: its section
    // shows the answer, the value, the charts and the program instead.
    ...(r.codemode ? [codeModeSection(me), usageSection(r), activitySection(r), notesSection(r)] : [
      h("div", { class: "grid2" }, planSection(r), usageSection(r)),
      iterationsSection(me),
      outputsSection(me),
      strengthSection(r),
      activitySection(r), // activity.js: what the model did
      notesSection(r),
      dataSection(r)])].filter(Boolean)));
  renderRunning(me);
}

function fact(label, value, id) {
  return h("div", { id }, h("b", {}, label), value);
}

// downloads are the job's script, its tests and its result object, saved
// from the result the page holds (the full one: a slim view is never shown).
function downloads(r) {
  const files = [];
  if (r.solution && r.solution.code) files.push(["solution.py", r.solution.code, "text/x-python"]);
  if (r.tests) files.push(["test_solution.py", r.tests, "text/x-python"]);
  files.push(["result.json", JSON.stringify(r, null, 2) + "\n", "application/json"]);
  return h("div", { class: "downloads", id: "downloads" }, h("span", { class: "muted" }, "Download: "),
    files.map(([name, text, type]) => h("button", { "data-file": name, onclick: () => saveBlob(name, text, type) }, name)));
}

async function act(me, what) {
  me.answer = null;
  const el = $("action-answer");
  el.textContent = what + "…";
  let text;
  try {
    // Rerun submits the job's spec again as a new job (POST /v1/jobs);
    // cancel is the job's own endpoint.
    const resp = what === "rerun"
      ? await api("v1/jobs", { method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ v: 1, spec: me.res && me.res.spec }) })
      : await api(path(me.id) + "/" + what, { method: "POST" });
    let body = (await resp.text()).trim();
    try {
      const j = JSON.parse(body);
      if (j.cancelled) body = "cancelled by " + j.cancelled.by + " at " + j.cancelled.at;
      else if (what === "rerun" && j.job_id) body = "new job " + j.job_id;
    } catch (_) { /* not JSON: show the text */ }
    text = resp.status + " " + resp.statusText + (body ? ": " + body.slice(0, 300) : "");
    el.className = "answer " + (resp.ok ? "ok" : "failed");
    if (resp.ok && what === "cancel") refreshSoon(me);
  } catch (err) {
    text = String(err);
    el.className = "answer failed";
  }
  me.answer = { text, cls: el.className };
  const now = $("action-answer"); // the page may have been drawn again meanwhile
  now.className = el.className;
  now.textContent = text;
  now.dataset.done = "1";
}

// timeline is the Gantt chart of the stages: each finished one with its
// wait in the queue (from dispatch to start, light) and its run, the
// stages stopped by a cancellation, and those in flight now.
function timeline(r, me) {
  const stages = (r.stages || []).slice();
  const live = [...((me && me.running) || new Map()).values()].sort((a, b) => a.seq - b.seq);
  const t0 = new Date(r.submitted_at).getTime();
  const now = Date.now();
  const at = (t) => (t ? new Date(t).getTime() - t0 : null);
  let span = 1;
  for (const s of stages) span = Math.max(span, at(s.started_at) + s.duration_ms, at(s.finished_at) || 0);
  for (const st of live) span = Math.max(span, now - t0);
  const bar = (queuedFrom, runFrom, end, cls) => {
    const pct = (x) => (100 * Math.max(0, x) / span).toFixed(2) + "%";
    const parts = [];
    if (queuedFrom != null && runFrom != null && runFrom > queuedFrom) {
      parts.push(h("span", { class: "queued", style: "left:" + pct(queuedFrom) + ";width:" + pct(runFrom - queuedFrom) }));
    }
    if (runFrom != null) parts.push(h("span", { class: cls, style: "left:" + pct(runFrom) + ";width:" + pct(end - runFrom) }));
    return h("div", { class: "bar" }, parts);
  };
  const rows = stages.map((s) => {
    const cancelled = s.outcome === "cancelled";
    const bad = cancelled || /^error|fail/.test(s.outcome);
    const start = s.started_at && !s.started_at.startsWith("0001") ? at(s.started_at) : null;
    const queued = s.dispatched_at ? at(s.dispatched_at) : null;
    const wait = queued != null && start != null ? Math.max(0, start - queued) : null;
    return h("tr", { "data-stage": s.name, "data-iteration": s.iteration, "data-outcome": cancelled ? "cancelled" : null },
      h("td", {}, h("b", {}, s.name)), h("td", { class: "num" }, s.iteration || "—"),
      h("td", { class: "num" }, start != null ? "+" + fmtMS(start) : "—"),
      h("td", { class: "num" }, wait != null ? fmtMS(wait) : "—"),
      h("td", { class: "num" }, start != null ? fmtMS(s.duration_ms) : "—"),
      h("td", {}, bar(queued, start != null ? start : queued, at(s.finished_at) || (start + s.duration_ms), s.cached ? "cached" : cancelled ? "cancelled" : bad ? "err" : null)),
      h("td", { class: "mono worker" }, s.worker || "—"), h("td", {}, s.cached ? h("span", { class: "badge cached" }, "cached") : ""),
      h("td", { class: bad ? "failed" : "" }, s.outcome),
      h("td", { class: "num" }, s.usage && s.usage.calls ? fmtInt(s.usage.input_tokens + s.usage.output_tokens) + " (" + s.usage.calls + ")" : ""));
  });
  for (const st of live) {
    const state = st.startedAt ? "running" : "queued";
    rows.push(h("tr", { "data-stage": st.stage, "data-iteration": st.iteration, "data-inflight": state },
      h("td", {}, h("b", {}, st.stage)), h("td", { class: "num" }, st.iteration || "—"),
      h("td", { class: "num" }, st.startedAt ? "+" + fmtMS(at(st.startedAt)) : "—"),
      h("td", { class: "num" }, fmtMS(Math.max(0, (st.startedAt ? new Date(st.startedAt).getTime() : now) - new Date(st.queuedAt).getTime()))),
      h("td", { class: "num" }, st.startedAt ? fmtMS(now - new Date(st.startedAt).getTime()) : "—"),
      h("td", {}, bar(at(st.queuedAt), st.startedAt ? at(st.startedAt) : now - t0, now - t0, "live")),
      h("td", { class: "mono worker" }, st.worker || "—"), h("td", {}, ""),
      h("td", {}, h("span", { class: "badge " + (st.startedAt ? "live" : "queued") }, state)), h("td", {}, "")));
  }
  if (me) me.timelineSig = live.map((st) => st.seq + (st.startedAt ? "r" : "q")).join(",");
  return h("section", { id: "timeline-section" }, h("h2", {}, "Timeline"),
    h("table", { id: "timeline" }, h("thead", {}, h("tr", {}, ["Stage", "Iter.", "Start", "Queued", "Ran", "", "Worker", "Cache", "Outcome", "Tokens (calls)"].map((c) => h("th", {}, c)))),
      h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 10, class: "muted" }, "No stage has finished yet.")))),
    h("p", { class: "muted legend" }, h("span", { class: "swatch queued" }), " waiting in its pool's queue  ",
      h("span", { class: "swatch" }), " running on a worker  ", h("span", { class: "swatch cached" }), " answered from the cache"));
}

function planSection(r) {
  const p = r.plan;
  return h("section", { id: "plan" }, h("h2", {}, "Plan"),
    p ? [h("p", {}, p.description), h("p", { class: "muted" }, p.approach)] : h("p", { class: "muted" }, "No plan yet."));
}

function usageSection(r) {
  const by = r.usage_by_stage || {};
  const rows = Object.keys(by).sort().map((st) => h("tr", { "data-stage": st }, h("td", {}, st),
    h("td", { class: "num" }, fmtInt(by[st].input_tokens)), h("td", { class: "num" }, fmtInt(by[st].output_tokens)), h("td", { class: "num" }, fmtInt(by[st].calls))));
  return h("section", { id: "usage" }, h("h2", {}, "Tokens and model calls per stage"),
    h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Stage"), h("th", { class: "num" }, "In"), h("th", { class: "num" }, "Out"), h("th", { class: "num" }, "Calls"))),
      h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 4, class: "muted" }, "No model calls yet.")))),
    h("p", { class: "muted" }, "Cache hits: " + fmtInt(r.cache_hits) + " (cached stages cost nothing)"));
}

// ---- iterations ----

function iterationsSection(me) {
  const its = me.its || [];
  const sec = h("section", { id: "iterations" }, h("h2", {}, "Iterations"));
  if (!its.length) {
    sec.append(h("p", { class: "muted" }, "No test run yet."));
    const r = me.res;
    if (r.solution) sec.append(h("h3", {}, "solution.py"), codePre(r.solution.code, { id: "final-code" }));
    if (r.tests) sec.append(h("h3", {}, "Tests"), codePre(r.tests, { id: "final-tests" }));
    if (r.output) sec.append(h("h3", {}, "Output"), pre(r.output, { id: "final-output" }));
    return sec;
  }
  if (me.tab == null || !its.some((i) => i.iteration === me.tab)) me.tab = its[its.length - 1].iteration;
  const body = h("div", { id: "iteration-body" });
  const tabs = h("div", { class: "tabs" }, its.map((it) => h("button", {
    class: it.iteration === me.tab ? "on" : null, "data-iteration": it.iteration,
    onclick: (e) => { me.tab = it.iteration; body.replaceChildren(...iterationBody(it, me.res)); for (const b of tabs.children) b.classList.toggle("on", b === e.currentTarget); },
  }, "Iteration " + it.iteration + " " + verdict(it))));
  body.replaceChildren(...iterationBody(its.find((i) => i.iteration === me.tab), me.res));
  sec.append(tabs, body);
  return sec;
}

function verdict(it) {
  const r = it.report;
  if (!r) return "…";
  if (r.timed_out) return "(timed out)";
  return r.failed || r.errors || r.exit_code ? "✗ " + (r.failed + r.errors) + " failing" : "✓";
}

// noReport says why an iteration has no test report: its tests run now,
// the job checks its script by running it (validate: run), or the job
// ended before they ran.
function noReport(res) {
  const validate = res && res.spec && res.spec.options && res.spec.options.validate;
  if (validate === "run") return "No tests: this job checks its script by running it (validate: run); the run is below.";
  if (res && res.status === "running") return "The tests are running.";
  return "No test report: the job ended before this iteration's tests ran.";
}

function iterationBody(it, res) {
  const out = [];
  const r = it.report;
  if (r) {
    out.push(h("p", { "data-role": "counts" }, h("b", {}, "pytest: "),
      r.passed + " passed, " + r.failed + " failed, " + r.errors + " errors, " + r.skipped + " skipped; exit " + r.exit_code + (r.timed_out ? ", timed out" : "")));
    out.push(h("table", { class: "cases", "data-role": "cases" },
      h("thead", {}, h("tr", {}, h("th", {}, "Test"), h("th", {}, "Result"), h("th", {}, "Message"))),
      h("tbody", {}, (r.cases || []).map((c) => h("tr", { "data-test": c.name, "data-outcome": c.outcome },
        h("td", { class: "mono" }, c.classname ? c.classname + "::" + c.name : c.name), h("td", { class: c.outcome }, c.outcome),
        h("td", {}, c.message || "", c.details ? h("details", {}, h("summary", {}, "traceback"), pre(c.details)) : null))))));
    out.push(h("details", { open: r.exit_code !== 0 ? true : null }, h("summary", {}, "pytest output"), pre(r.output, { "data-role": "pytest-output" })));
  } else {
    out.push(h("p", { class: "muted", "data-role": "no-report" }, noReport(res)));
  }
  if (it.diagnosis && it.diagnosis.failures && it.diagnosis.failures.length) out.push(diagnosisTable(it));
  if (it.acceptance) {
    const a = it.acceptance;
    out.push(h("h3", {}, "Run on the samples: " + (a.ok ? "ok" : "failed")),
      a.problems && a.problems.length ? h("ul", { class: "notes" }, a.problems.map((p) => h("li", {}, p))) : null, a.output ? pre(a.output) : null);
  }
  out.push(codeBlock("solution.py", it.code, it.code_diff, it.iteration, "code"));
  out.push(codeBlock("Tests", it.tests, it.tests_diff, it.iteration, "tests"));
  if (it.trimmed) out.push(h("p", { class: "muted" }, "The code or the tests were trimmed to keep the job state small."));
  return out.filter(Boolean);
}

function diagnosisTable(it) {
  const routes = new Map((it.routes || []).map((r) => [r.test.split("::").pop(), r]));
  const d = it.diagnosis;
  return h("div", { "data-role": "diagnosis" }, h("h3", {}, "Diagnosis"),
    h("table", {}, h("thead", {}, h("tr", {}, ["Test", "Error type", "Root cause", "Suggested fix", "Route", "Reclassified"].map((c) => h("th", {}, c)))),
      h("tbody", {}, d.failures.map((f) => {
        const rt = routes.get(f.test_name) || routes.get((f.test_name || "").split("::").pop());
        return h("tr", { "data-test": f.test_name },
          h("td", { class: "mono" }, f.test_name), h("td", {}, f.error_type + (rt && rt.class && rt.class !== f.error_type ? " → " + rt.class : "")),
          h("td", {}, f.root_cause || f.error_message || ""), h("td", {}, f.suggested_fix || ""),
          h("td", {}, rt ? rt.route + (rt.applied ? " (applied)" : "") : "—"), h("td", {}, rt && rt.flips ? rt.flips.join(", ") : ""));
      }))),
    d.needs_packages && d.needs_packages.length ? h("p", {}, "Needs packages: ", h("span", { class: "mono" }, d.needs_packages.join(", "))) : null);
}

// codeBlock shows code with a switch between the whole file and its diff
// against the previous iteration.
function codeBlock(title, code, diff, n, role) {
  const box = h("div", { "data-role": role });
  const whole = codePre(code);
  const show = (which) => { box.lastChild.replaceWith(which === "diff" ? diffEl(diff, { "data-role": role + "-diff" }) : whole); };
  const head = h("h3", {}, title + " ",
    diff ? h("button", { "data-action": role + "-diff", onclick: () => show("diff") }, "diff with iteration " + (n - 1)) : h("span", { class: "muted" }, n > 1 ? "(unchanged)" : ""),
    diff ? h("button", { onclick: () => show("whole") }, "whole file") : null);
  box.append(head, diff ? diffEl(diff, { "data-role": role + "-diff" }) : whole);
  return box;
}

// ---- code mode: the answer, the value, the charts ----

// codeModeSection shows a code-mode job's answer and value, the charts
// its programs drew (images fetched with the token: an <img> could not
// send it) and the other files they wrote.
function codeModeSection(me) {
  const cm = me.res.codemode;
  const charts = cm.charts || [];
  const others = (cm.outputs || []).filter((f) => !f.chart);
  const box = h("section", { id: "codemode" }, h("h2", {}, "Code mode"),
    cm.summary ? h("p", { id: "codemode-summary" }, cm.summary) : null,
    h("p", {}, h("b", {}, "Value "), h("span", { class: "mono", id: "codemode-value" }, JSON.stringify(cm.value))),
    charts.length ? h("div", { id: "charts", class: "charts" }, charts.map((f) => {
      const fig = h("figure", { "data-chart": f.name }, h("figcaption", { class: "mono" }, f.name));
      if (f.object) showChart(me, f, fig);
      return fig;
    })) : null,
    others.length ? h("ul", { id: "codemode-files" }, others.map((f) => h("li", { "data-file": f.name },
      h("span", { class: "mono" }, f.name + " (" + fmtInt(f.size) + " bytes) "),
      f.object ? h("button", { onclick: () => fetchFile(me.id, f, true) }, "download") : null))) : null,
    cm.code ? [h("h3", {}, "Last program"), codePre(cm.code, { id: "codemode-code" })] : null);
  return box;
}

async function fetchFile(id, f, save) {
  const resp = await fetch(path(id) + "/files/" + encodeURIComponent(f.name), { headers: authHeaders() });
  if (!resp.ok) { if (save) alert("download " + f.name + ": " + resp.status); return null; }
  const url = URL.createObjectURL(await resp.blob());
  if (save) {
    const a = h("a", { href: url, download: f.name.split("/").pop() });
    document.body.append(a); a.click(); a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  }
  return url;
}

// showChart shows a chart's image, fetched once for the page (a redraw
// reuses it; the page's end revokes it): each redraw fetched it again and
// left the last blob in memory.
async function showChart(me, f, fig) {
  if (!me.charts.has(f.object)) me.charts.set(f.object, fetchFile(me.id, f, false));
  const url = await me.charts.get(f.object);
  if (url) fig.prepend(h("img", { src: url, alt: f.name, "data-loaded": "1" }));
}

// ---- outputs, notes, data ----

function outputsSection(me) {
  const r = me.res;
  const types = (r.spec && r.spec.outputs) || {};
  const names = Object.keys(r.outputs || {}).sort();
  const rows = names.map((name) => {
    const v = r.outputs[name];
    const t = types[name] || typeof v;
    let cell;
    if ((t === "File" || t === "Dir") && v && v.object) {
      cell = h("button", { "data-download": name, onclick: () => download(me.id, name, t) }, "download " + (t === "Dir" ? name + ".tar" : name));
    } else {
      cell = h("span", { class: "mono" }, typeof v === "string" ? v : JSON.stringify(v));
    }
    return h("tr", { "data-output": name }, h("td", { class: "mono" }, name), h("td", {}, t), h("td", {}, cell));
  });
  return h("section", { id: "outputs" }, h("h2", {}, "Outputs"),
    rows.length ? h("table", {}, h("tbody", {}, rows)) : h("p", { class: "muted" }, "No outputs."));
}

// strengthSection shows the tests' strength by mutation: the score, how
// strengthening changed it and what it cost, and the surviving mutants.
function strengthSection(r) {
  const ts = r.test_strength;
  if (!ts) return null;
  const body = [];
  if (ts.error) {
    body.push(h("p", { class: "muted", id: "strength-error" }, "Not measured: " + ts.error));
  } else {
    const judged = ts.killed + ts.survived;
    body.push(h("div", { class: "facts", id: "strength-facts" },
      fact("Score", ts.score.toFixed(2) + (ts.score >= ts.min_test_strength ? "" : " (below " + ts.min_test_strength.toFixed(2) + ")"), "strength-score"),
      fact("Mutants killed", ts.killed + " of " + judged),
      fact("Equivalent", String(ts.equivalent)),
      fact("Scores", (ts.scores || []).map((s) => s.toFixed(2)).join(" → ") || "—", "strength-scores"),
      fact("Strengthening", ts.rounds + " round(s), " + fmtInt(ts.usage.calls) + " call(s), " +
        fmtInt(ts.usage.input_tokens + ts.usage.output_tokens) + " tokens")));
    for (const s of ts.survivors || []) {
      body.push(h("div", { "data-role": "survivor" },
        h("h3", {}, "Surviving: line " + s.line + ", " + s.description + " (" + s.operator + ")"),
        s.witness ? h("p", {}, "Differs at ", h("span", { class: "mono" }, s.witness),
          ": solution " + (s.original || "?") + ", mutant " + (s.mutant || "?")) : null,
        diffEl(s.diff || "")));
    }
  }
  if (ts.outcome) body.push(h("p", { class: "muted", id: "strength-outcome" }, ts.outcome));
  return h("section", { id: "strength" }, h("h2", {}, "Test strength"), ...body);
}

// download fetches an output with the token and saves it: a plain link
// could not send the Authorization header.
async function download(id, name, type) {
  const resp = await fetch(path(id) + "/outputs/" + encodeURIComponent(name), { headers: authHeaders() });
  if (!resp.ok) { alert("download " + name + ": " + resp.status + " " + (await resp.text())); return; }
  const url = URL.createObjectURL(await resp.blob());
  const a = h("a", { href: url, download: type === "Dir" ? name + ".tar" : name });
  document.body.append(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

function notesSection(r) {
  const notes = r.notes || [];
  return h("section", { id: "notes" }, h("h2", {}, "Notes"),
    notes.length ? h("ul", { class: "notes" }, notes.map((n) => h("li", {}, n))) : h("p", { class: "muted" }, "No notes."));
}

function dataSection(r) {
  const schemas = r.generated_schemas || {};
  return h("section", { id: "data" }, h("h2", {}, "Data context and generated schemas"),
    r.data_context ? pre(r.data_context, { id: "data-context" }) : h("p", { class: "muted" }, "No samples: no data context."),
    Object.keys(schemas).sort().map((k) => h("div", { "data-schema": k }, h("h3", {}, "Schema of " + k), codePre(schemas[k]))));
}
