// The job list: a page of the job index (GET v1/summaries), searched by
// name, prompt or ID, filtered by status and submission date, sorted,
// refreshed while it is shown; jobs picked with their boxes are
// cancelled or run again together (a token with the submit scope).
import { $, h, api, can, errorText, fmtTime, fmtMS, fmtInt, durationOf, statusEl } from "./dom.js";

const PAGE = 25;
const STATUSES = ["", "running", "succeeded", "failed", "errored", "cancelled"];
const SORTS = [["newest", "newest first"], ["oldest", "oldest first"], ["duration", "longest"], ["tokens", "most tokens"], ["name", "name"]];
let timer = null;
let view = null; // the list shown: its query, the picked jobs and its elements

export function stopList() {
  if (timer) { clearInterval(timer); timer = null; }
  view = null;
}

// queryOf reads the list's query from the hash's parameters.
function queryOf(params) {
  const status = STATUSES.includes(params.get("status") || "") ? (params.get("status") || "") : "";
  const sort = SORTS.some(([k]) => k === params.get("sort")) ? params.get("sort") : "newest";
  return {
    status, sort, q: params.get("q") || "", since: params.get("since") || "", until: params.get("until") || "",
    offset: Math.max(0, parseInt(params.get("offset") || "0", 10) || 0),
  };
}

function listHash(q) {
  const p = new URLSearchParams();
  for (const k of ["status", "q", "since", "until"]) if (q[k]) p.set(k, q[k]);
  if (q.sort && q.sort !== "newest") p.set("sort", q.sort);
  if (q.offset) p.set("offset", String(q.offset));
  const s = p.toString();
  return "#/" + (s ? "?" + s : "");
}

export async function showList(params) {
  const v = { q: queryOf(params), picked: new Set(), jobs: new Map(), canSubmit: false };
  view = v;
  v.canSubmit = await can("submit");
  if (view !== v) return;
  skeleton(v);
  const load = () => loadList(v);
  load();
  timer = setInterval(load, 5000);
}

// go shows the list for q (a new hash, so the browser's back works).
function go(q) { location.hash = listHash(q); }

// skeleton draws the controls once; loadList fills the table, so a
// refresh keeps what is typed and picked.
function skeleton(v) {
  const q = v.q;
  const search = h("input", { id: "search", type: "search", placeholder: "search name, prompt or job ID", value: q.q, "aria-label": "search" });
  const sort = h("select", { id: "sort", "aria-label": "sort" }, SORTS.map(([k, label]) => h("option", { value: k, selected: k === q.sort ? true : null }, label)));
  const since = h("input", { id: "since", type: "date", value: q.since, "aria-label": "submitted from" });
  const until = h("input", { id: "until", type: "date", value: q.until, "aria-label": "submitted before" });
  const apply = (e) => {
    if (e) e.preventDefault();
    go(Object.assign({}, q, { q: search.value.trim(), sort: sort.value, since: since.value, until: until.value, offset: 0 }));
  };
  sort.addEventListener("change", apply);
  since.addEventListener("change", apply);
  until.addEventListener("change", apply);
  const form = h("form", { class: "search", id: "search-form", onsubmit: apply }, search, h("button", {}, "Search"), sort,
    h("label", { class: "muted" }, "from ", since), h("label", { class: "muted" }, "before ", until),
    q.q || q.since || q.until ? h("a", { href: listHash({ status: q.status }), id: "clear" }, "clear") : null);
  const bulk = v.canSubmit ? h("div", { class: "bulk", id: "bulk" },
    h("span", { class: "muted", id: "picked" }, "none picked"),
    h("button", { id: "bulk-cancel", disabled: true, onclick: () => bulkAct(v, "cancel") }, "Cancel picked"),
    h("button", { id: "bulk-rerun", disabled: true, onclick: () => bulkAct(v, "rerun") }, "Rerun picked"),
    h("span", { class: "answer", id: "bulk-answer" })) : null;
  $("view").replaceChildren(h("section", {}, h("div", { class: "listhead" }, h("h2", {}, "Jobs"),
    v.canSubmit ? h("a", { class: "button", href: "#/new", id: "new-job" }, "New job") : null),
  form, h("div", { class: "filters", id: "filters" }), bulk, h("div", { id: "list-body" }, h("p", { class: "muted" }, "Loading…"))));
}

// localDayStart is the start of day (YYYY-MM-DD) in the browser's zone,
// as RFC 3339; a value that is not a date goes as it is.
function localDayStart(day) {
  const t = new Date(day + "T00:00");
  return isNaN(t) ? day : t.toISOString();
}

async function loadList(v) {
  const q = v.q;
  const p = new URLSearchParams({ limit: String(PAGE), offset: String(q.offset), sort: q.sort });
  for (const k of ["status", "q"]) if (q[k]) p.set(k, q[k]);
  // A date picked is a day where the browser is, as the table shows times:
  // its start there goes to the server, which reads a bare date as UTC.
  for (const k of ["since", "until"]) if (q[k]) p.set(k, localDayStart(q[k]));
  const resp = await api("v1/summaries?" + p);
  if (!resp.ok) {
    const why = resp.status === 401 ? "An API token is needed: enter one above." : "The job list is not available: " + resp.status + " " + (await errorText(resp));
    if (view === v) $("list-body").replaceChildren(h("p", { class: "muted", id: "list-error" }, why));
    return;
  }
  const page = await resp.json();
  if (view === v) render(v, page); // not when another page was opened while this one loaded
}

function render(v, page) {
  const q = v.q;
  if (page.jobs.length === 0 && q.offset > 0) {
    // This page emptied (its jobs cancelled, or the filter now matches
    // fewer): the last page that has jobs, not "26–25 of 25".
    go(Object.assign({}, q, { offset: Math.max(0, Math.floor((page.total - 1) / PAGE) * PAGE) }));
    return;
  }
  $("filters").replaceChildren(...STATUSES.map((s) => {
    const n = s ? (page.counts[s] || 0) : Object.values(page.counts).reduce((a, b) => a + b, 0);
    return h("button", { class: s === q.status ? "on" : null, "data-filter": s || "all", onclick: () => go(Object.assign({}, q, { status: s, offset: 0 })) },
      (s || "all") + " (" + n + ")");
  }));
  v.jobs = new Map(page.jobs.map((j) => [j.job_id, j]));
  const rows = page.jobs.map((j) => {
    const box = v.canSubmit ? h("input", { type: "checkbox", class: "pick", "data-pick": j.job_id, checked: v.picked.has(j.job_id) ? true : null,
      "aria-label": "pick " + j.job_id, onclick: (e) => { e.stopPropagation(); pick(v, j.job_id, e.currentTarget.checked); } }) : null;
    return h("tr", { class: "job", "data-id": j.job_id, onclick: () => { location.hash = "#/jobs/" + j.job_id; } },
      v.canSubmit ? h("td", { class: "pickcell", onclick: (e) => e.stopPropagation() }, box) : null,
      h("td", {}, h("div", { class: "mono" }, j.name || j.job_id), h("div", { class: "muted" }, (j.prompt || j.error || "").slice(0, 110))),
      h("td", {}, statusEl(j.status), inFlight(j)),
      h("td", {}, fmtTime(j.submitted_at)),
      h("td", { class: "num" }, fmtMS(durationOf(j.submitted_at, j.finished_at))),
      h("td", { class: "num" }, String(j.iterations)),
      h("td", { class: "num" }, fmtInt(j.tokens)));
  });
  const all = v.canSubmit ? h("input", { type: "checkbox", id: "pick-all", "aria-label": "pick every job on the page",
    onclick: (e) => { for (const id of v.jobs.keys()) pick(v, id, e.currentTarget.checked); render(v, page); } }) : null;
  const table = h("table", { id: "jobs" },
    h("thead", {}, h("tr", {}, v.canSubmit ? h("th", {}, all) : null, h("th", {}, "Job"), h("th", {}, "Status"), h("th", {}, "Submitted"),
      h("th", { class: "num" }, "Duration"), h("th", { class: "num" }, "Iterations"), h("th", { class: "num" }, "Tokens"))),
    h("tbody", {}, rows));
  const last = Math.min(page.total, q.offset + page.jobs.length);
  const pager = h("div", { class: "pager", id: "pager" },
    h("button", { disabled: q.offset === 0 ? true : null, onclick: () => go(Object.assign({}, q, { offset: Math.max(0, q.offset - PAGE) })) }, "← previous"),
    h("span", { class: "muted" }, page.total ? (q.offset + 1) + "–" + last + " of " + page.total : "no jobs"),
    h("button", { disabled: last >= page.total ? true : null, onclick: () => go(Object.assign({}, q, { offset: q.offset + PAGE })) }, "next →"));
  const searching = q.q || q.since || q.until || q.status;
  const empty = page.total === 0 ? h("p", { class: "muted", id: "empty" }, searching ? "No job matches." : "No jobs here yet. Submit one with ",
    searching ? null : h("span", { class: "mono" }, "submit job.yaml"), searching ? null : " or the New job form.") : null;
  $("list-body").replaceChildren(table, empty, pager);
  showPicked(v);
}

// inFlight says what a running job does now: its stages queued and running.
function inFlight(j) {
  if (!j.running || !j.running.length) return null;
  const queued = j.queued || [];
  const running = j.running.slice();
  for (const s of queued) running.splice(running.indexOf(s), 1);
  return h("div", { class: "muted" }, running.length ? "running: " + running.join(", ") : null,
    running.length && queued.length ? "; " : null, queued.length ? "queued: " + queued.join(", ") : null);
}

function pick(v, id, on) {
  if (on) v.picked.add(id); else v.picked.delete(id);
  showPicked(v);
}

function showPicked(v) {
  const el = $("picked");
  if (!el) return;
  el.textContent = v.picked.size ? v.picked.size + " picked" : "none picked";
  $("bulk-cancel").disabled = v.picked.size === 0;
  $("bulk-rerun").disabled = v.picked.size === 0;
}

// bulkAct cancels the picked jobs (POST v1/jobs/<id>/cancel) or submits
// each one's spec again as a new job (POST v1/jobs), and says how many
// went through; a job that finished already cannot be cancelled (409).
async function bulkAct(v, what) {
  const ids = [...v.picked];
  const el = $("bulk-answer");
  el.className = "answer";
  el.textContent = what + " " + ids.length + "…";
  const outcomes = await Promise.all(ids.map((id) => (what === "cancel" ? cancelOne(id) : rerunOne(id))));
  const ok = outcomes.filter((o) => o.ok).length;
  const failed = outcomes.filter((o) => !o.ok).map((o) => o.text);
  const verb = what === "cancel" ? "cancelled" : "submitted again";
  el.className = "answer " + (failed.length ? "failed" : "ok");
  el.textContent = ok + " of " + ids.length + " " + verb + (failed.length ? "; " + failed.join("; ") : "");
  el.dataset.done = "1";
  v.picked.clear();
  loadList(v);
}

async function cancelOne(id) {
  const resp = await api("v1/jobs/" + encodeURIComponent(id) + "/cancel", { method: "POST" });
  if (resp.ok) return { ok: true };
  return { ok: false, text: id + ": " + (resp.status === 409 ? "finished already" : resp.status + " " + (await errorText(resp))) };
}

async function rerunOne(id) {
  const r = await api("v1/jobs/" + encodeURIComponent(id) + "?view=slim");
  if (!r.ok) return { ok: false, text: id + ": " + (await errorText(r)) };
  const res = await r.json();
  if (!res.spec) return { ok: false, text: id + ": no spec to run again" };
  const resp = await api("v1/jobs", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ v: 1, spec: res.spec }) });
  if (resp.ok) return { ok: true };
  return { ok: false, text: id + ": " + (await errorText(resp)) };
}
