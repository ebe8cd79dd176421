// The job list: a page of the job index (GET v1/summaries), filtered by
// status, refreshed while it is shown.
import { $, h, api, fmtTime, fmtMS, fmtInt, durationOf, statusEl } from "./dom.js";

const PAGE = 25;
const STATUSES = ["", "running", "succeeded", "failed", "errored"];
let timer = null;

export function stopList() {
  if (timer) { clearInterval(timer); timer = null; }
}

export function showList(params) {
  const status = STATUSES.includes(params.get("status") || "") ? (params.get("status") || "") : "";
  const offset = Math.max(0, parseInt(params.get("offset") || "0", 10) || 0);
  const load = () => loadList(status, offset);
  load();
  timer = setInterval(load, 5000);
}

function listHash(status, offset) {
  const q = new URLSearchParams();
  if (status) q.set("status", status);
  if (offset) q.set("offset", String(offset));
  const s = q.toString();
  return "#/" + (s ? "?" + s : "");
}

async function loadList(status, offset) {
  const q = new URLSearchParams({ limit: String(PAGE), offset: String(offset) });
  if (status) q.set("status", status);
  const resp = await api("v1/summaries?" + q);
  if (!resp.ok) {
    $("view").replaceChildren(h("section", {}, h("p", { class: "muted", id: "list-error" },
      resp.status === 401 ? "An API token is needed: enter one above." : "The job list is not available: " + resp.status + " " + (await resp.text()))));
    return;
  }
  render(await resp.json(), status, offset);
}

function render(page, status, offset) {
  const filters = h("div", { class: "filters", id: "filters" }, STATUSES.map((s) => {
    const n = s ? (page.counts[s] || 0) : Object.values(page.counts).reduce((a, b) => a + b, 0);
    return h("button", { class: s === status ? "on" : null, "data-filter": s || "all", onclick: () => { location.hash = listHash(s, 0); } },
      (s || "all") + " (" + n + ")");
  }));
  const rows = page.jobs.map((j) => h("tr", { class: "job", "data-id": j.job_id, onclick: () => { location.hash = "#/jobs/" + j.job_id; } },
    h("td", {}, h("div", { class: "mono" }, j.name || j.job_id), h("div", { class: "muted" }, (j.prompt || j.error || "").slice(0, 110))),
    h("td", {}, statusEl(j.status), j.running && j.running.length ? h("div", { class: "muted" }, "running: " + j.running.join(", ")) : null),
    h("td", {}, fmtTime(j.submitted_at)),
    h("td", { class: "num" }, fmtMS(durationOf(j.submitted_at, j.finished_at))),
    h("td", { class: "num" }, String(j.iterations)),
    h("td", { class: "num" }, fmtInt(j.tokens))));
  const table = h("table", { id: "jobs" },
    h("thead", {}, h("tr", {}, h("th", {}, "Job"), h("th", {}, "Status"), h("th", {}, "Started"),
      h("th", { class: "num" }, "Duration"), h("th", { class: "num" }, "Iterations"), h("th", { class: "num" }, "Tokens"))),
    h("tbody", {}, rows));
  const last = Math.min(page.total, offset + page.jobs.length);
  const pager = h("div", { class: "pager", id: "pager" },
    h("button", { disabled: offset === 0 ? true : null, onclick: () => { location.hash = listHash(status, Math.max(0, offset - PAGE)); } }, "← newer"),
    h("span", { class: "muted" }, page.total ? (offset + 1) + "–" + last + " of " + page.total : "no jobs"),
    h("button", { disabled: last >= page.total ? true : null, onclick: () => { location.hash = listHash(status, offset + PAGE); } }, "older →"));
  const empty = page.total === 0 ? h("p", { class: "muted", id: "empty" }, "No jobs here yet. Submit one with ", h("span", { class: "mono" }, "submit job.yaml"), ".") : null;
  $("view").replaceChildren(h("section", {}, h("h2", {}, "Jobs"), filters, table, empty, pager));
}
