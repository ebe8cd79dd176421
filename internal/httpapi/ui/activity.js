// What the model did, on the job page: the conversation (each model
// stage's messages), the agent's tool calls, code mode's turns and the
// documentation each stage was given (context_used). All of it is in the
// result object; the slim view (?view=slim) leaves it out, so the page
// reads the full one.
import { h, fmtMS, fmtInt } from "./dom.js";
import { codePre } from "./highlight.js";

// How many conversation messages show before "show all".
const FIRST_MESSAGES = 12;

// activitySection is the section, or nothing when the job has none of it.
export function activitySection(r) {
  const parts = [conversation(r.conversation_history || []), agentTrace(r.agent), codeModeTurns(r.codemode), contextUsed(r.context_used || [])]
    .filter(Boolean);
  if (!parts.length) return null;
  return h("section", { id: "activity" }, h("h2", {}, "What the model did"), parts);
}

// conversation lists the messages, each folded to its first line; a
// system message the coordinator stored once and referred to after is
// shown as that reference.
function conversation(msgs) {
  if (!msgs.length) return null;
  const box = h("div", { id: "conversation" });
  const list = h("ol", { class: "messages" });
  const show = (n) => list.replaceChildren(...msgs.slice(0, n).map(message));
  show(FIRST_MESSAGES);
  box.append(h("h3", {}, "Conversation (" + msgs.length + " messages)"), list);
  if (msgs.length > FIRST_MESSAGES) {
    const more = h("button", { "data-action": "all-messages", onclick: () => { show(msgs.length); more.remove(); } }, "show all " + msgs.length);
    box.append(more);
  }
  return box;
}

function message(m) {
  const text = m.content || "";
  const first = text.split("\n", 1)[0].slice(0, 160);
  return h("li", { class: "msg " + (m.role || ""), "data-role": m.role, "data-stage": m.stage || null },
    h("details", {}, h("summary", {}, h("span", { class: "badge" }, m.role || "?"), m.stage ? h("span", { class: "muted" }, " " + m.stage) : null,
      " ", h("span", { class: "first" }, first), text.length > first.length ? h("span", { class: "muted" }, " … (" + fmtInt(text.length) + " characters)") : null),
    h("pre", { class: "wrap" }, text)));
}

// agentTrace is the agent backend's tool calls, turn by turn.
function agentTrace(ag) {
  if (!ag || !(ag.trace || []).length) return null;
  const rows = ag.trace.map((c) => h("tr", { "data-tool": c.tool, "data-verdict": c.verdict },
    h("td", { class: "num" }, String(c.turn)), h("td", { class: "mono" }, c.tool), h("td", { class: "mono args" }, c.arguments || ""),
    h("td", { class: c.verdict === "ok" || c.verdict === "tests" ? "ok" : "failed" }, c.verdict), h("td", { class: "num" }, fmtMS(c.duration_ms)),
    h("td", {}, c.outcome || "")));
  const by = Object.entries(ag.calls_by_tool || {}).sort().map(([t, n]) => t + " " + n).join(", ");
  return h("div", { id: "agent-trace" }, h("h3", {}, "Agent: " + ag.turns + " turns, " + ag.trace.length + " tool calls" +
      (ag.dropped ? " (" + ag.dropped + " more left out)" : "")),
    by ? h("p", { class: "muted" }, "By tool: " + by + "; test runs " + ag.test_runs + ", refused " + ag.denied + ".") : null,
    h("table", {}, h("thead", {}, h("tr", {}, ["Turn", "Tool", "Arguments", "Verdict", "Took", "Outcome"].map((c) => h("th", {}, c)))),
      h("tbody", {}, rows)));
}

// codeModeTurns is code mode's events: each turn's program, what it
// observed or the error, and the final answer.
function codeModeTurns(cm) {
  if (!cm || !(cm.events || []).length) return null;
  const items = cm.events.map((e) => {
    let body = null;
    if (e.code) body = codePre(e.code);
    else if (e.observation) body = h("pre", { class: "wrap" }, e.observation);
    else if (e.error) body = h("pre", { class: "wrap error-text" }, e.error);
    else if (e.text) body = h("p", {}, e.text);
    return h("li", { "data-turn": e.turn, "data-type": e.type }, h("b", {}, "turn " + e.turn + ": " + e.type), body);
  });
  return h("div", { id: "codemode-turns" }, h("h3", {}, "Code mode: " + cm.turns + " turns"), h("ol", { class: "turns" }, items));
}

// contextUsed is the documentation each model stage was given: the whole
// context, or the chunks retrieved for it, best first.
function contextUsed(used) {
  if (!used.length) return null;
  const rows = used.map((c) => h("tr", { "data-stage": c.stage },
    h("td", {}, c.stage), h("td", { class: "num" }, String(c.iteration || 0)),
    h("td", {}, c.retrieved ? "retrieved" : "all of it"),
    h("td", {}, h("ul", { class: "chunks" }, (c.chunks || []).map((k) => h("li", {},
      h("span", { class: "mono" }, k.file + "#" + k.index), k.heading ? " " + k.heading : "",
      c.retrieved ? h("span", { class: "muted" }, " (score " + Number(k.score).toFixed(2) + ")") : null))))));
  return h("div", { id: "context-used" }, h("h3", {}, "Documentation used"),
    h("table", {}, h("thead", {}, h("tr", {}, ["Stage", "Iter.", "Context", "Chunks"].map((c) => h("th", {}, c)))), h("tbody", {}, rows)));
}
