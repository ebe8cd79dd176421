"""Documentation as a job's context (docs/coderunner.md): files and folders
read into one bundle, uploaded beside the samples, named in the spec by its
object reference, as the command line's --context does."""

from __future__ import annotations

import html.parser
import json
import os
import tempfile
from typing import Any, Iterable, Optional

from . import _http
from .errors import InvalidRequestError

# The bounds the server checks too (pkg/messages: MaxContext*).
MAX_ENTRIES = 64
MAX_FILES = 512
MAX_FILE_BYTES = 2 << 20
MAX_TEXT_BYTES = 8 << 20

DOC_EXTS = (".md", ".markdown", ".txt", ".rst", ".html", ".htm")


class _Text(html.parser.HTMLParser):
    """An HTML page's text, headings kept as Markdown headings; scripts and
    styles left out."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self._skip = 0
        self._heading: Optional[list[str]] = None
        self._level = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        elif len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self._heading, self._level = [], int(tag[1])
        elif tag in ("p", "div", "li", "br", "tr", "pre", "section"):
            self.out.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skip:
            self._skip -= 1
        elif self._heading is not None and len(tag) == 2 and tag[0] == "h":
            text = " ".join("".join(self._heading).split())
            if text:  # an empty heading says nothing
                self.out.append("\n\n" + "#" * self._level + " " + text + "\n\n")
            self._heading = None

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        if self._heading is not None:
            self._heading.append(data)
        else:
            self.out.append(data)


def _strip_html(text: str) -> str:
    p = _Text()
    p.feed(text)
    p.close()
    return "".join(p.out).strip() + "\n"


def _doc_files(entry: str) -> list[tuple[str, str]]:
    """(name, path) of the documentation files of one entry: a file, or a
    folder's documentation files not under a hidden name, sorted, each
    named by its path from the folder's parent."""
    if os.path.isfile(entry):
        return [(os.path.basename(entry), entry)]
    if not os.path.isdir(entry):
        raise InvalidRequestError("%s is not a file or folder" % entry, "context")
    root = os.path.abspath(entry)
    parent = os.path.dirname(root)
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if not x.startswith("."))
        for f in sorted(files):
            if not f.startswith(".") and f.lower().endswith(DOC_EXTS):
                full = os.path.join(d, f)
                out.append((os.path.relpath(full, parent).replace(os.sep, "/"), full))
    if not out:
        raise InvalidRequestError("no %s file in %s" % (", ".join(DOC_EXTS), entry), "context")
    return out


def bundle(entries: Iterable[str]) -> dict[str, Any]:
    """The ContextBundle of the entries (files or folders), within the
    server's bounds; a file's name is its path from its folder's parent."""
    entries = list(entries)
    if len(entries) > MAX_ENTRIES:
        raise InvalidRequestError("%d entries, more than %d" % (len(entries), MAX_ENTRIES), "context")
    files: list[dict[str, str]] = []
    seen: set[str] = set()
    total = 0
    for entry in entries:
        for name, path in _doc_files(os.fspath(entry)):
            real = os.path.realpath(path)
            if real in seen:
                continue  # given twice: read once
            seen.add(real)
            if os.path.getsize(path) > MAX_FILE_BYTES:
                raise InvalidRequestError("%s is larger than %d bytes" % (path, MAX_FILE_BYTES), "context")
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            if name.lower().endswith((".html", ".htm")):
                text = _strip_html(text)
            total += len(text.encode("utf-8"))
            if len(files) >= MAX_FILES or total > MAX_TEXT_BYTES:
                raise InvalidRequestError("the documentation is over the bounds (%d files, %d bytes of text)"
                                          % (MAX_FILES, MAX_TEXT_BYTES), "context")
            names = {x["path"] for x in files}
            while name in names:  # two files of one name: keep more of the path
                name = "%d/%s" % (len(files), name)
            files.append({"path": name, "text": text})
    return {"files": files}


def upload_context(conn: _http.Connection, entries: Iterable[str]) -> list[str]:
    """The spec's context: object references given are kept, files and
    folders are read into one bundle and uploaded."""
    refs: list[str] = []
    paths: list[str] = []
    for e in entries:
        e = os.fspath(e)
        (refs if e.startswith("sha256:") else paths).append(e)
    if not paths:
        return refs
    fd, tmp = tempfile.mkstemp(suffix=".json", prefix="autocoder-context-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(bundle(paths), f)
        ref: str = _http.upload(conn, "context.json", tmp)
    finally:
        os.remove(tmp)
    return refs + [ref]
