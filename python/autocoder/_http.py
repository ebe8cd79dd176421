"""The HTTP API (docs/api.md) over urllib: a bearer token, JSON bodies,
and the API's answers turned into this client's errors."""

import http.client
import json
import os
import urllib.error
import urllib.parse
import urllib.request

from .errors import AuthError, InvalidRequestError, NotFoundError, UnavailableError

DEFAULT_URL = "http://127.0.0.1:8080"


class Connection:
    """Where the coordinator's HTTP API is and the token to use: url and
    token, else AUTOCODER_URL and AUTOCODER_TOKEN (or AUTOCODER_TOKEN_FILE),
    else http://127.0.0.1:8080 without a token."""

    def __init__(self, url=None, token=None, timeout=60.0):
        self.url = (url or os.environ.get("AUTOCODER_URL") or DEFAULT_URL).rstrip("/")
        if token is None:
            token = os.environ.get("AUTOCODER_TOKEN")
        if token is None and os.environ.get("AUTOCODER_TOKEN_FILE"):
            with open(os.environ["AUTOCODER_TOKEN_FILE"]) as f:
                token = f.read().strip()
        self.token = token
        self.timeout = timeout

    def __repr__(self):  # never the token
        return "Connection(%r)" % self.url

    def request(self, method, path, body=None, data=None, content_type="application/json"):
        """Sends a request and returns (status, headers, bytes) of a 2xx
        answer; any other answer raises the matching error."""
        if body is not None:
            data = json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            raise _error(method, path, e.code, e.read()) from None
        except (urllib.error.URLError, OSError) as e:
            raise UnavailableError("%s %s: %s (is autocoder's HTTP API at %s?)" % (method, path, e, self.url)) from None

    def json(self, method, path, body=None):
        _, _, raw = self.request(method, path, body=body)
        return json.loads(raw)

    def stream_to(self, path, out):
        """GETs path and writes the body to the binary file out."""
        req = urllib.request.Request(self.url + path, method="GET")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
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


def quote(segment):
    return urllib.parse.quote(segment, safe="")


def _error(method, path, status, raw):
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
    if status in (401, 403):
        return AuthError(where)
    if status == 404:
        return NotFoundError(where)
    if status in (400, 413) or code == "invalid":
        return InvalidRequestError(message if body else where, field)
    return UnavailableError(message if body else where)


def upload(conn, file_name, path):
    """Uploads the file at path as a sample named file_name (its extension
    is kept) and returns its object reference."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        req = urllib.request.Request(conn.url + "/v1/samples?name=" + quote(file_name), data=f, method="POST")
        req.add_header("Content-Type", "application/octet-stream")
        req.add_header("Content-Length", str(size))
        if conn.token:
            req.add_header("Authorization", "Bearer " + conn.token)
        try:
            with urllib.request.urlopen(req, timeout=conn.timeout) as r:
                return json.loads(r.read())["object"]
        except urllib.error.HTTPError as e:
            raise _error("POST", "/v1/samples", e.code, e.read()) from None
        except (urllib.error.URLError, OSError) as e:
            raise UnavailableError("upload %s: %s" % (file_name, e)) from None
