"""The HTTP API (docs/api.md) over urllib: a bearer token, JSON bodies,
and the API's answers turned into this client's errors."""

from __future__ import annotations

import http.client
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from email.message import Message
from typing import IO, Any, Callable, Optional, TypeVar

from .errors import AuthError, AutoCoderError, InvalidRequestError, NotFoundError, UnavailableError

T = TypeVar("T")

DEFAULT_URL = "http://127.0.0.1:8080"

# UPLOAD_TIMEOUT bounds a sample's upload: after the last byte the server
# hashes and stores the file (up to 2 GiB) before it answers.
UPLOAD_TIMEOUT = 600.0

# BUSY_RETRIES is how often a request answered 503 or 429 with a
# Retry-After (the server busy: four uploads at once, say) is sent again.
BUSY_RETRIES = 5


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuses to follow a redirect: urllib would send the token on to
    wherever it points (another host included) and turn a POST into a GET."""

    def redirect_request(self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str, headers: Message,
                         newurl: str) -> Optional[urllib.request.Request]:
        raise UnavailableError("%s %s: the server answered %d, a redirect to %s; autocoder's API does not redirect, "
                               "so the client does not follow it (check the URL)" % (req.get_method(), req.full_url, code, newurl))


_opener = urllib.request.build_opener(_NoRedirect)


def retry_after(value: Optional[str], most: float) -> Optional[float]:
    """A Retry-After header's seconds, at most most; None when it is
    absent or not a number of seconds."""
    if value is None:
        return None
    try:
        return max(0.0, min(float(value), most))
    except (TypeError, ValueError):
        return None


def _retry_after(e: urllib.error.HTTPError) -> Optional[float]:
    """The seconds a busy answer (503 or 429 with Retry-After) asks to
    wait, or None."""
    if e.code not in (429, 503):
        return None
    return retry_after(e.headers.get("Retry-After") if e.headers else None, 60.0)


class Connection:
    """Where the coordinator's HTTP API is and the token to use: url and
    token, else AUTOCODER_URL and AUTOCODER_TOKEN (or AUTOCODER_TOKEN_FILE),
    else http://127.0.0.1:8080 without a token."""

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, timeout: float = 60.0) -> None:
        self.url: str = (url or os.environ.get("AUTOCODER_URL") or DEFAULT_URL).rstrip("/")
        if token is None:
            token = os.environ.get("AUTOCODER_TOKEN")
        if token is None and os.environ.get("AUTOCODER_TOKEN_FILE"):
            with open(os.environ["AUTOCODER_TOKEN_FILE"]) as f:
                token = f.read().strip()
        self.token: Optional[str] = token
        self.timeout = timeout

    def __repr__(self) -> str:  # never the token
        return "Connection(%r)" % self.url

    def request(self, method: str, path: str, body: Any = None, data: Optional[bytes] = None,
                content_type: str = "application/json") -> tuple[int, Message, bytes]:
        """Sends a request and returns (status, headers, bytes) of a 2xx
        answer; any other answer raises the matching error. A busy answer
        (503 or 429 with Retry-After) is waited out and sent again, a few
        times."""
        if body is not None:
            data = json.dumps(body).encode()

        def send() -> tuple[int, Message, bytes]:
            req = urllib.request.Request(self.url + path, data=data, method=method)
            if data is not None:
                req.add_header("Content-Type", content_type)
            if self.token:
                req.add_header("Authorization", "Bearer " + self.token)
            with _opener.open(req, timeout=self.timeout) as r:
                return r.status, r.headers, r.read()

        try:
            return _busy_retried(method, path, send)
        except (urllib.error.URLError, OSError) as e:
            raise UnavailableError("%s %s: %s (is autocoder's HTTP API at %s?)" % (method, path, e, self.url)) from None

    def json(self, method: str, path: str, body: Any = None) -> Any:
        _, _, raw = self.request(method, path, body=body)
        return json.loads(raw)

    def stream_to(self, path: str, out: IO[bytes]) -> None:
        """GETs path and writes the body to the binary file out."""
        req = urllib.request.Request(self.url + path, method="GET")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with _opener.open(req, timeout=self.timeout) as r:
                want, got = r.headers.get("Content-Length"), 0
                while True:
                    chunk = r.read(1 << 16)
                    if not chunk:
                        break
                    got += len(chunk)
                    out.write(chunk)
                # read(n) returns what came when the body ends early: a
                # file cut short must not pass for the whole of it.
                if want is not None and want.isdigit() and got < int(want):
                    raise http.client.IncompleteRead(b"", int(want) - got)
        except urllib.error.HTTPError as e:
            raise _error("GET", path, e.code, e.read()) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            # HTTPException: the server cut the body short (IncompleteRead),
            # as it does when a download fails its check midway.
            raise UnavailableError("GET %s: %s" % (path, e)) from None


def quote(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")


def _error(method: str, path: str, status: int, raw: bytes) -> AutoCoderError:
    """The error of a non-2xx answer. Every error answer of the HTTP API is
    JSON, {"error", "code", "field"} (an APIReply also has "kind"); the
    status picks the class, as for a plain-text answer from a proxy."""
    text = raw.decode("utf-8", "replace").strip()
    try:
        reply = json.loads(text)
    except ValueError:
        reply = None
    body = isinstance(reply, dict) and bool(reply.get("error"))
    message = reply["error"] if body else text
    field = reply.get("field", "") if body else ""
    code = (reply.get("code") or reply.get("kind") or "") if body else ""
    where = "%s %s: %d %s" % (method, path, status, message)
    err: AutoCoderError
    if status in (401, 403):
        err = AuthError(where)
    elif status == 404:
        err = NotFoundError(where)
    elif status in (400, 413) or code == "invalid":
        err = InvalidRequestError(message if body else where, field)
    else:
        err = UnavailableError(message if body else where)
    # What the server said, for a caller that tells a full store (507)
    # from a busy one (503), or a too-large request (413) from a bad one.
    err.status, err.code = status, code
    return err


def upload(conn: Connection, file_name: str, path: str) -> Any:
    """Uploads the file at path as a sample named file_name (its extension
    is kept) and returns its object reference. A busy server (503 with
    Retry-After: it takes a few uploads at once) is waited out."""
    size = os.path.getsize(path)

    def send() -> Any:
        with open(path, "rb") as f:  # opened again for each attempt: a body is read once
            req = urllib.request.Request(conn.url + "/v1/samples?name=" + quote(file_name), data=f, method="POST")
            req.add_header("Content-Type", "application/octet-stream")
            req.add_header("Content-Length", str(size))
            if conn.token:
                req.add_header("Authorization", "Bearer " + conn.token)
            with _opener.open(req, timeout=max(conn.timeout, UPLOAD_TIMEOUT)) as r:
                return json.loads(r.read())["object"]

    try:
        return _busy_retried("POST", "/v1/samples", send)
    except (urllib.error.URLError, OSError) as e:
        raise UnavailableError("upload %s: %s" % (file_name, e)) from None


def _busy_retried(method: str, path: str, send: Callable[[], T]) -> T:
    """send()'s answer; a busy answer (503 or 429 with Retry-After) is
    waited out and sent again, BUSY_RETRIES times at most, and any other
    HTTP error is the matching error of this client."""
    for attempt in range(BUSY_RETRIES + 1):
        try:
            return send()
        except urllib.error.HTTPError as e:
            wait = _retry_after(e)
            raw = e.read()
            if wait is None or attempt == BUSY_RETRIES:
                raise _error(method, path, e.code, raw) from None
            time.sleep(wait)
    raise AssertionError("unreachable: the last attempt returns or raises")
