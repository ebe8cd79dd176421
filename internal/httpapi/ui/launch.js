// The launch form (#/new; #/new?from=<job> starts from that job's spec),
// as Flyte's launch form or Temporal's "start workflow": the prompt, typed
// inputs and outputs, constraints, options and sample files. Samples are
// uploaded first (POST v1/samples, their object references go in the
// spec); the job goes to POST v1/jobs, checked by the coordinator as any
// other submission, and an error names the field, which the form marks.
import { $, h, api, can, errorText } from "./dom.js";

const INPUT_TYPES = ["str", "int", "float", "bool", "File", "Dir"];
const OUTPUT_TYPES = ["str", "int", "float", "bool", "datetime", "timedelta", "File", "Dir"];

let shown = null;

export function stopLaunch() { shown = null; }

export async function showLaunch(params) {
  const me = {};
  shown = me;
  if (!(await can("submit"))) {
    if (shown === me) $("view").replaceChildren(h("section", {}, h("p", { class: "muted", id: "launch-denied" }, "Starting a job needs a token with the submit scope.")));
    return;
  }
  let spec = {};
  const from = params.get("from");
  if (from) {
    const r = await api("v1/jobs/" + encodeURIComponent(from) + "?view=slim");
    if (r.ok) spec = (await r.json()).spec || {};
  }
  if (shown !== me) return;
  $("view").replaceChildren(form(spec, from));
}

// typedRows is an editable list of name: type rows (inputs or outputs).
function typedRows(id, types, values) {
  const list = h("div", { class: "rows", id });
  const add = (name, type) => {
    const row = h("div", { class: "row" },
      h("input", { class: "name", placeholder: "name", value: name || "", "aria-label": id + " name" }),
      h("select", { class: "type", "aria-label": id + " type" }, types.map((t) => h("option", { value: t, selected: t === type ? true : null }, t))),
      h("button", { type: "button", class: "remove", onclick: () => row.remove() }, "×"));
    list.append(row);
  };
  for (const [k, t] of Object.entries(values || {})) add(k, t);
  return { el: h("div", {}, list, h("button", { type: "button", "data-add": id, onclick: () => add("", types[0]) }, "+ add")), read: () => readRows(list) };
}

function readRows(list) {
  const out = {};
  for (const row of list.querySelectorAll(".row")) {
    const name = row.querySelector(".name").value.trim();
    if (name) out[name] = row.querySelector(".type").value;
  }
  return out;
}

// sampleRows pick sample files, each under a name (the file's name
// without its extension, unless one is typed). A sample of the job the
// form starts from is kept as its object reference.
function sampleRows(existing) {
  const list = h("div", { class: "rows", id: "samples" });
  const add = (name, ref) => {
    const file = h("input", { type: "file", class: "file", "aria-label": "sample file" });
    const nameEl = h("input", { class: "name", placeholder: "name (default: the file's)", value: name || "", "aria-label": "sample name" });
    file.addEventListener("change", () => {
      if (!nameEl.value && file.files[0]) nameEl.value = file.files[0].name.replace(/\.[^.]*$/, "").replace(/[^A-Za-z0-9_]/g, "_");
    });
    const row = h("div", { class: "row", "data-ref": ref || null }, nameEl, ref ? h("span", { class: "mono muted" }, ref.slice(0, 20) + "…") : file,
      h("button", { type: "button", class: "remove", onclick: () => row.remove() }, "×"));
    row.sample = { nameEl, file, ref };
    list.append(row);
  };
  for (const [k, ref] of Object.entries(existing || {})) add(k, ref);
  return { el: h("div", {}, list, h("button", { type: "button", "data-add": "samples", onclick: () => add() }, "+ add a sample")), list, add };
}

function field(label, control, hint) {
  return h("label", { class: "field" }, h("span", { class: "label" }, label), control, hint ? h("span", { class: "muted hint" }, hint) : null);
}

function form(spec, from) {
  const o = spec.options || {};
  const name = h("input", { id: "f-name", value: spec.name || "", placeholder: "summarize-sales" });
  const prompt = h("textarea", { id: "f-prompt", rows: 5, placeholder: "Read the CSV and compute total_revenue, total_units and row_count." }, spec.prompt || "");
  const schema = h("textarea", { id: "f-schema", rows: 2, placeholder: "optional: what the data looks like" }, spec.schema || "");
  const constraints = h("textarea", { id: "f-constraints", rows: 3, placeholder: "one a line: quantity must be positive" }, (spec.constraints || []).join("\n"));
  const inputs = typedRows("inputs", INPUT_TYPES, spec.inputs);
  const outputs = typedRows("outputs", OUTPUT_TYPES, spec.outputs || (from ? {} : { result: "str" }));
  const samples = sampleRows(spec.samples);
  const opt = {
    model: h("input", { id: "o-model", value: o.model || "", placeholder: "the deployment's default" }),
    max_iterations: h("input", { id: "o-max_iterations", type: "number", min: 1, value: o.max_iterations || "", placeholder: "10" }),
    timeout: h("input", { id: "o-timeout", value: o.timeout || "", placeholder: "60s" }),
    backend: h("select", { id: "o-backend" }, ["pipeline", "agent"].map((b) => h("option", { selected: o.backend === b ? true : null }, b))),
    validate: h("select", { id: "o-validate" }, ["tests", "run"].map((b) => h("option", { selected: o.validate === b ? true : null }, b))),
    cache: h("select", { id: "o-cache" }, ["auto", "override", "disable"].map((b) => h("option", { selected: o.cache === b ? true : null }, b))),
    skip_tests: h("input", { id: "o-skip_tests", type: "checkbox", checked: o.skip_tests ? true : null }),
  };
  const answer = h("p", { class: "answer", id: "launch-answer" });
  const submit = h("button", { id: "launch", class: "primary" }, "Launch");
  const el = h("form", { id: "launch-form", class: "launch" },
    h("h2", {}, from ? "New job from " + from : "New job"),
    field("Name", name, "for people and image names"),
    field("Prompt", prompt),
    field("Schema", schema),
    h("div", { class: "grid2" }, h("div", {}, h("h3", {}, "Inputs"), inputs.el), h("div", {}, h("h3", {}, "Outputs"), outputs.el)),
    field("Constraints", constraints),
    h("h3", {}, "Samples"), samples.el,
    h("details", { open: from ? true : null }, h("summary", {}, "Options"), h("div", { class: "options" },
      field("Model", opt.model), field("Max iterations", opt.max_iterations), field("Timeout per run", opt.timeout),
      field("Backend", opt.backend), field("Validate by", opt.validate), field("Cache", opt.cache), field("Skip tests", opt.skip_tests))),
    h("div", { class: "actions" }, submit, answer));
  el.addEventListener("submit", async (e) => {
    e.preventDefault();
    submit.disabled = true;
    try {
      await launch({ name, prompt, schema, constraints, inputs, outputs, samples, opt }, answer);
    } finally {
      submit.disabled = false;
    }
  });
  return h("section", {}, el);
}

// launch uploads the samples, then submits the spec; it marks the field
// an error names.
async function launch(f, answer) {
  for (const bad of document.querySelectorAll(".invalid")) bad.classList.remove("invalid");
  const say = (text, cls) => { answer.textContent = text; answer.className = "answer " + cls; answer.dataset.done = "1"; };
  say("uploading…", "");
  const spec = { prompt: f.prompt.value };
  if (f.name.value.trim()) spec.name = f.name.value.trim();
  if (f.schema.value.trim()) spec.schema = f.schema.value;
  const cons = f.constraints.value.split("\n").map((c) => c.trim()).filter(Boolean);
  if (cons.length) spec.constraints = cons;
  const ins = f.inputs.read();
  if (Object.keys(ins).length) spec.inputs = ins;
  spec.outputs = f.outputs.read();
  const samples = {};
  for (const row of f.samples.list.querySelectorAll(".row")) {
    const { nameEl, file, ref } = row.sample;
    if (ref) { samples[nameEl.value.trim() || "sample"] = ref; continue; }
    const chosen = file.files[0];
    if (!chosen) continue;
    const resp = await api("v1/samples?name=" + encodeURIComponent(chosen.name), { method: "POST", body: chosen });
    if (!resp.ok) { say("upload " + chosen.name + ": " + resp.status + " " + (await errorText(resp)), "failed"); return; }
    samples[nameEl.value.trim() || chosen.name.replace(/\.[^.]*$/, "")] = (await resp.json()).object;
  }
  if (Object.keys(samples).length) spec.samples = samples;
  const options = {};
  for (const [k, el] of Object.entries(f.opt)) {
    if (el.type === "checkbox") { if (el.checked) options[k] = true; continue; }
    const v = el.value.trim();
    if (!v) continue;
    options[k] = k === "max_iterations" ? Number(v) : v;
  }
  if (options.backend === "pipeline") delete options.backend;
  if (options.validate === "tests") delete options.validate;
  if (options.cache === "auto") delete options.cache;
  if (Object.keys(options).length) spec.options = options;
  say("submitting…", "");
  const resp = await api("v1/jobs", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ v: 1, spec }) });
  const text = await resp.text();
  let reply = {};
  try { reply = JSON.parse(text); } catch (_) { reply = { error: text }; }
  if (resp.ok && reply.job_id) {
    location.hash = "#/jobs/" + reply.job_id;
    return;
  }
  say(resp.status + ": " + (reply.error || text), "failed");
  markField(reply.field || "");
}

// markField marks the control of a field an error names
// ("spec.outputs.total", "spec.options.timeout", "spec.prompt").
function markField(path) {
  const parts = path.replace(/^spec\./, "").split(".");
  const ids = { name: "f-name", prompt: "f-prompt", schema: "f-schema", constraints: "f-constraints", inputs: "inputs", outputs: "outputs", samples: "samples" };
  let el = parts[0] === "options" ? $("o-" + parts[1]) : $(ids[parts[0]] || "");
  if (el) { el.classList.add("invalid"); el.scrollIntoView({ block: "center" }); }
}
