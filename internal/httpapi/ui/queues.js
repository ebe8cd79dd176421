// The queues and workers page (#/queues, GET v1/queues): per pool, the
// stage commands waiting and how long the oldest has, those in flight,
// the capacity (the live workers' slots) and how much of it is used, and
// the pause switch, which a token with the submit scope flips (POST
// v1/pools/<pool>/pause and /resume); then every live worker with its
// slots, in flight and last beat. Refreshed while shown.
import { $, h, api, can, errorText, fmtTime, fmtMS, fmtInt, durationOf } from "./dom.js";

let timer = null;
let shown = null;

export function stopQueues() {
  if (timer) { clearInterval(timer); timer = null; }
  shown = null;
}

export async function showQueues() {
  const me = {};
  shown = me; // before the first await: a route change meanwhile clears it
  me.canSubmit = await can("submit");
  if (shown !== me) return;
  const load = () => loadQueues(me);
  await load();
  if (shown === me) timer = setInterval(load, 3000);
}

async function loadQueues(me, force) {
  // Not while a reason is being typed: drawing the page again would take
  // the box away from under the keys.
  const typing = document.activeElement && document.activeElement.dataset && document.activeElement.dataset.reason !== undefined;
  if (typing && !force) return;
  const resp = await api("v1/queues");
  if (!resp.ok) {
    const why = resp.status === 401 ? "An API token is needed: enter one above." : "The queues are not available: " + resp.status + " " + (await errorText(resp));
    if (shown === me) $("view").replaceChildren(h("section", {}, h("p", { class: "muted", id: "queues-error" }, why)));
    return;
  }
  const v = await resp.json();
  if (shown !== me) return;
  // Keep what is typed in a reason box across the refresh.
  const reasons = {};
  for (const el of document.querySelectorAll("input[data-reason]")) reasons[el.dataset.reason] = el.value;
  $("view").replaceChildren(pools(me, v.pools, reasons), workers(v.pools));
}

function pools(me, list, reasons) {
  const rows = list.map((p) => {
    const paused = !!(p.pause && p.pause.paused);
    const sat = p.slots ? Math.round(100 * p.saturation) + "%" : "—";
    const reason = h("input", { "data-reason": p.pool, placeholder: "reason (optional)", value: reasons[p.pool] || "", "aria-label": "reason" });
    const action = me.canSubmit ? h("span", { class: "pause" }, reason,
      h("button", { "data-action": paused ? "resume" : "pause", "data-pool": p.pool, onclick: () => flip(me, p.pool, paused ? "resume" : "pause", reason.value) },
        paused ? "Resume" : "Pause")) : null;
    return h("tr", { "data-pool": p.pool, "data-paused": paused ? "true" : "false" },
      h("td", {}, h("b", {}, p.pool)),
      h("td", {}, paused ? h("span", { class: "badge paused", id: "paused-" + p.pool }, "paused") : h("span", { class: "badge live" }, "running"),
        p.pause && p.pause.by ? h("div", { class: "muted" }, (paused ? "paused" : "resumed") + " by " + p.pause.by + " at " + fmtTime(p.pause.at) +
          (p.pause.reason ? ": " + p.pause.reason : "")) : null),
      h("td", { class: "num", "data-role": "pending" }, fmtInt(p.pending)),
      h("td", { class: "num" }, p.pending ? fmtMS(1000 * p.oldest_pending_seconds) : "—"),
      h("td", { class: "num", "data-role": "in-flight" }, fmtInt(p.in_flight)),
      h("td", { class: "num", "data-role": "slots" }, fmtInt(p.slots)),
      h("td", { class: "num" }, sat, p.slots ? h("div", { class: "meter" }, h("span", { style: "width:" + Math.min(100, Math.round(100 * p.saturation)) + "%" })) : null),
      h("td", { class: "num" }, String((p.workers || []).length)),
      h("td", {}, action));
  });
  return h("section", { id: "pools" }, h("h2", {}, "Worker pools"),
    h("table", { id: "pools-table" }, h("thead", {}, h("tr", {}, ["Pool", "State", "Waiting", "Oldest waiting", "In flight", "Slots", "Used", "Workers", ""]
      .map((c, i) => h("th", { class: i >= 2 && i <= 7 ? "num" : null }, c)))), h("tbody", {}, rows)),
    h("p", { class: "muted" }, "A paused pool's workers take no new stage; what they run finishes. Stages wait in the queue until it is resumed."),
    h("p", { class: "answer", id: "pool-answer" }));
}

function workers(list) {
  const rows = [];
  for (const p of list) {
    for (const w of p.workers || []) {
      rows.push(h("tr", { "data-worker": w.worker, "data-pool": p.pool },
        h("td", {}, p.pool), h("td", { class: "mono" }, w.worker), h("td", { class: "mono muted" }, w.instance),
        h("td", { class: "num" }, fmtInt(w.slots)), h("td", { class: "num" }, fmtInt(w.in_flight)),
        h("td", {}, w.paused ? "paused" : "fetching"),
        h("td", { class: "num" }, fmtMS(durationOf(w.at)) + " ago"), h("td", {}, fmtTime(w.started_at))));
    }
  }
  return h("section", { id: "workers" }, h("h2", {}, "Workers"),
    rows.length ? h("table", { id: "workers-table" }, h("thead", {}, h("tr", {}, ["Pool", "Worker", "Instance", "Slots", "In flight", "", "Last beat", "Up since"]
      .map((c, i) => h("th", { class: i >= 3 && i <= 4 ? "num" : null }, c)))), h("tbody", {}, rows))
      : h("p", { class: "muted", id: "no-workers" }, "No worker is beating: none runs, or none has started yet."));
}

async function flip(me, pool, what, reason) {
  const resp = await api("v1/pools/" + encodeURIComponent(pool) + "/" + what, { method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify(reason ? { reason } : {}) });
  const msg = resp.ok ? pool + " " + (what === "pause" ? "paused" : "resumed") : what + " " + pool + ": " + resp.status + " " + (await errorText(resp));
  await loadQueues(me, true);
  const el = $("pool-answer");
  if (el) { el.textContent = msg; el.className = "answer " + (resp.ok ? "ok" : "failed"); el.dataset.done = "1"; }
  if (resp.ok) for (const box of document.querySelectorAll("input[data-reason='" + pool + "']")) box.value = "";
}
