// A small Python highlighter for the code the UI shows (solution.py, the
// tests, the Pandera schemas, code-mode programs). Hand-written rather
// than a vendored highlight.js or Prism: those return HTML strings to be
// put in with innerHTML, which this UI never uses (every string from a
// job is text, dom.js), and Python is the only language shown. Each token
// becomes a text node, in a <span> with its class; what it does not know
// stays plain text, so a wrong guess only loses a colour.

const KEYWORDS = new Set(("False None True and as assert async await break class continue def del elif else except " +
  "finally for from global if import in is lambda nonlocal not or pass raise return try while with yield match case").split(" "));
const BUILTINS = new Set(("abs all any bool dict enumerate filter float int isinstance len list map max min open print " +
  "range repr reversed round set sorted str sum tuple type zip super object Exception ValueError TypeError KeyError " +
  "IndexError RuntimeError self cls").split(" "));

// One alternative per kind of token, tried in this order at each place.
const TOKEN = new RegExp([
  /(#[^\n]*)/.source,                                              // 1 comment
  /((?:[rRbBuUfF]{1,2})?(?:"""[\s\S]*?(?:"""|$)|'''[\s\S]*?(?:'''|$)|"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?))/.source, // 2 string
  /(@[A-Za-z_][\w.]*)/.source,                                     // 3 decorator
  /(\b(?:0[xX][\da-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|\d[\d_]*\.?[\d_]*(?:[eE][+-]?\d+)?j?)\b)/.source, // 4 number
  /([A-Za-z_]\w*)/.source,                                          // 5 name
].join("|"), "g");

// highlight returns the nodes of code, highlighted as Python.
export function highlight(code) {
  const out = [];
  let last = 0;
  let prev = ""; // the name before this one: def and class name what follows
  TOKEN.lastIndex = 0;
  for (let m = TOKEN.exec(code); m; m = TOKEN.exec(code)) {
    if (m[0] === "") { TOKEN.lastIndex++; continue; }
    if (m.index > last) out.push(document.createTextNode(code.slice(last, m.index)));
    let cls = null;
    if (m[1]) cls = "tok-com";
    else if (m[2]) cls = "tok-str";
    else if (m[3]) cls = "tok-dec";
    else if (m[4]) cls = "tok-num";
    else if (m[5]) {
      if (KEYWORDS.has(m[5])) cls = "tok-kw";
      else if (prev === "def" || prev === "class") cls = "tok-def";
      else if (BUILTINS.has(m[5])) cls = "tok-bi";
      prev = m[5];
    }
    if (!m[5]) prev = "";
    const text = document.createTextNode(m[0]);
    if (cls) {
      const span = document.createElement("span");
      span.className = cls;
      span.append(text);
      out.push(span);
    } else {
      out.push(text);
    }
    last = TOKEN.lastIndex;
  }
  if (last < code.length) out.push(document.createTextNode(code.slice(last)));
  return out;
}

// codePre is a <pre> of code, highlighted, with attrs; a dash without code.
export function codePre(code, attrs) {
  const el = document.createElement("pre");
  for (const [k, v] of Object.entries(attrs || {})) if (v != null) el.setAttribute(k, String(v));
  el.classList.add("code");
  if (code) el.append(...highlight(code));
  else el.append("—");
  return el;
}
