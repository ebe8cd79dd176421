// Small helpers shared by the views: DOM building without innerHTML (every
// string from a job is text, never markup), the API with the tab's token,
// and formatting.

export const $ = (id) => document.getElementById(id);

// h builds an element: h("td", {class: "num"}, "42", child, ...). Strings
// become text nodes; null and false children are skipped.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  // flat(Infinity): a child may be a list of lists (a section per key);
  // one level would leave lists inside to be stringified as
  // "[object HTMLHeadingElement],[object HTMLPreElement]".
  for (const c of children.flat(Infinity)) {
    if (c == null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// keepDetails runs redraw, which replaces what root holds, and leaves each
// <details> as the user left it (open or closed), found again by where it
// is: the id of the nearest element above it, its summary's text and its
// rank among those alike. A live page redraws whenever a stage ends, which
// closed the traceback the user was reading.
export function keepDetails(root, redraw) {
  const keyed = () => {
    const seen = new Map();
    return [...root.querySelectorAll("details")].map((d) => {
      const anchor = d.parentElement ? d.parentElement.closest("[id]") : null;
      const summary = d.querySelector("summary");
      const base = (anchor ? anchor.id : "") + "|" + (summary ? summary.textContent : "");
      const n = seen.get(base) || 0;
      seen.set(base, n + 1);
      return [base + "|" + n, d];
    });
  };
  const open = new Map(keyed().map(([k, d]) => [k, d.open]));
  redraw();
  for (const [k, d] of keyed()) if (open.has(k)) d.open = open.get(k);
}

// The API token lives in sessionStorage: asked for once per tab, sent as a
// header, never put in a URL.
const TOKEN_KEY = "autocoder-token";

export function authHeaders() {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token ? { "Authorization": "Bearer " + token } : {};
}

export async function api(path, init) {
  init = init || {};
  init.headers = Object.assign({}, init.headers, authHeaders());
  const resp = await fetch(path, init);
  if (resp.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    $("auth").hidden = false;
  }
  return resp;
}

export function useToken(token, then) {
  sessionStorage.setItem(TOKEN_KEY, token);
  $("auth").hidden = true;
  me = null;
  then();
}

// The token's name and scopes (GET v1/whoami), asked once per token, so
// a page offers only what the token may do: no Cancel, Rerun, launch or
// pause for a read token.
let me = null;

export async function whoami() {
  if (me) return me;
  const resp = await api("v1/whoami");
  const who = resp.ok ? await resp.json() : { name: "", scopes: [] };
  if (resp.ok) me = who;
  return who;
}

export async function can(scope) {
  return (await whoami()).scopes.includes(scope);
}

// errorText is what an error answer says: its JSON error body's message
// and field, or its text.
export async function errorText(resp) {
  const text = (await resp.text()).trim();
  try {
    const j = JSON.parse(text);
    if (j && typeof j.error === "string") return j.error;
  } catch (_) { /* not JSON: the text itself */ }
  return text;
}

// saveBlob saves data under name, as a download.
export function saveBlob(name, data, type) {
  const url = URL.createObjectURL(data instanceof Blob ? data : new Blob([data], { type: type || "text/plain" }));
  const a = h("a", { href: url, download: name });
  document.body.append(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

export function fmtTime(t) {
  if (!t) return "—";
  const d = new Date(t);
  return isNaN(d) ? "—" : d.toLocaleString();
}

export function fmtMS(ms) {
  if (ms == null || isNaN(ms)) return "—";
  if (ms < 1000) return Math.round(ms) + " ms";
  const s = ms / 1000;
  if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + " s";
  const m = Math.floor(s / 60);
  return m + " min " + Math.round(s - 60 * m) + " s";
}

export function durationOf(from, to) {
  if (!from) return null;
  const end = to ? new Date(to) : new Date();
  return end - new Date(from);
}

export function fmtInt(n) {
  return n == null ? "—" : Number(n).toLocaleString("en-US");
}

export function statusEl(status) {
  return h("span", { class: "status " + status, "data-status": status }, status || "—");
}

// pre shows text, or a dash when there is none.
export function pre(text, attrs) {
  return h("pre", attrs, text ? text : "—");
}

// diffEl shows a unified diff with its added, removed and hunk lines marked.
export function diffEl(diff, attrs) {
  const el = h("pre", Object.assign({ class: "diff" }, attrs));
  for (const line of diff.replace(/\n$/, "").split("\n")) {
    let cls = null;
    if (line.startsWith("@@")) cls = "hunk";
    else if (line.startsWith("+") && !line.startsWith("+++")) cls = "add";
    else if (line.startsWith("-") && !line.startsWith("---")) cls = "del";
    el.append(cls ? h("span", { class: cls }, line) : document.createTextNode(line + "\n"));
  }
  return el;
}
