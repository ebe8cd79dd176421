"""Python types and the wire's: declared inputs and outputs, values sent as
arguments and read back as outputs, files and directories, resources."""

from __future__ import annotations

import datetime
import os
import re
from typing import IO, Any, Callable, Optional, Union

from .errors import InvalidRequestError

# Fetch writes a remote file's bytes to out.
Fetch = Callable[[IO[bytes]], None]

# A declared type: a Python type (float, File) or its wire name ("float").
TypeLike = Union[type, str]

# PathLike is what names a local file: a path text or an os.PathLike.
PathLike = Union[str, "os.PathLike[str]"]


class File:
    """A file: as a type (``outputs={"report": File}``), a local file to
    upload (``samples={"sales": File("sales.csv")}``), or a File output or
    original sample of a result, which ``download(path)`` writes."""

    def __init__(self, path: Optional[PathLike] = None, *, name: Optional[str] = None, object: Any = None,
                 size: Optional[int] = None, _fetch: Optional[Fetch] = None) -> None:
        self.path: Optional[str] = os.fspath(path) if path is not None else None
        self.name = name
        self.object = object
        self.size = size
        self._fetch = _fetch

    def download(self, path: str) -> str:
        """Writes the remote file to path (a directory: path/<its name>)
        and returns the path written."""
        if self._fetch is None:
            raise InvalidRequestError("this File is local (%s), not a result's" % self.path)
        if os.path.isdir(path):
            path = os.path.join(path, self.name or "")
        tmp = path + ".part"
        try:
            with open(tmp, "wb") as out:
                self._fetch(out)
        except BaseException:
            os.remove(tmp)  # a download cut short leaves nothing behind
            raise
        os.replace(tmp, path)
        self.path = path
        return path

    def __fspath__(self) -> str:
        if self.path is None:
            raise TypeError("remote File %s: download it first" % self.name)
        return self.path

    def __repr__(self) -> str:
        return "File(%r)" % (self.path or self.object)


class Dir(File):
    """A directory: as a type, a local directory to upload, or a Dir output,
    which ``download(path)`` unpacks into path."""

    def download(self, path: str) -> str:
        """Unpacks the remote directory into the directory path (made if
        need be), as path/<its name>, and returns that path."""
        import tarfile
        import tempfile

        if self._fetch is None:
            raise InvalidRequestError("this Dir is local (%s), not a result's" % self.path)
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile() as tmp:
            self._fetch(tmp)
            tmp.seek(0)
            with tarfile.open(fileobj=tmp) as tar:
                members = [m for m in tar.getmembers() if m.isdir() or m.isfile()]
                for m in members:  # the server writes <name>/<relative path>; nothing else is taken
                    if m.name.startswith("/") or ".." in m.name.split("/") or m.name.split("/")[0] != self.name:
                        raise InvalidRequestError("archive member %r is outside %s" % (m.name, self.name))
                if hasattr(tarfile, "data_filter"):
                    extract: Any = tar.extractall  # filter= is 3.12's (and backports'), newer than some type stubs
                    extract(path, members=members, filter="data")
                else:
                    tar.extractall(path, members=members)
        self.path = os.path.join(path, self.name or "")
        return self.path

    def __repr__(self) -> str:
        return "Dir(%r)" % (self.path or self.object)


class Resources:
    """CPU and memory of a sandbox run, like flyte.Resources: cpu in cores,
    memory as a quantity ("1Gi", "512Mi")."""

    def __init__(self, cpu: Optional[float] = None, memory: Optional[str] = None) -> None:
        self.cpu = cpu
        self.memory = memory

    def __repr__(self) -> str:
        return "Resources(cpu=%r, memory=%r)" % (self.cpu, self.memory)


_TYPES: dict[type, str] = {
    str: "str", int: "int", float: "float", bool: "bool",
    datetime.datetime: "datetime", datetime.timedelta: "timedelta",
    File: "File", Dir: "Dir",
}
_NAMES = {v: k for k, v in _TYPES.items()}
INPUT_TYPES = ("str", "int", "float", "bool", "File", "Dir")
OUTPUT_TYPES = ("str", "int", "float", "bool", "datetime", "timedelta", "File", "Dir")


def wire_type(t: TypeLike, field: str, allowed: tuple[str, ...]) -> str:
    """The wire name of a declared type: a Python type (float, File, ...)
    or its name ("float")."""
    name = _TYPES.get(t) if isinstance(t, type) else t if isinstance(t, str) else None
    if name is None and isinstance(t, type):
        # flyte.io.File and friends: by class name.
        name = {"File": "File", "Dir": "Dir"}.get(t.__name__)
    if name not in allowed:
        raise InvalidRequestError("unsupported type %r (want one of %s)" % (getattr(t, "__name__", t), ", ".join(allowed)), field)
    return name


def arg_value(value: Any, field: str) -> str:
    """A scalar input's value as the text the script gets."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return repr(value) if isinstance(value, float) else str(value)
    raise InvalidRequestError("a %s is not a value of a scalar input (str, int, float, bool)" % type(value).__name__, field)


_DURATION = re.compile(r"^([+-])?P(?:([\d.]+)W)?(?:([\d.]+)D)?(?:T(?:([\d.]+)H)?(?:([\d.]+)M)?(?:([\d.]+)S)?)?$")


# The server writes a fraction of a second with as many digits as it
# needs (up to nanoseconds); datetime.fromisoformat before Python 3.11
# takes three or six only.
_FRACTION = re.compile(r"^(.*T\d\d:\d\d:\d\d)\.(\d+)(.*)$")


def parse_datetime(v: Any) -> datetime.datetime:
    """A datetime as the server writes it (RFC 3339), on Python 3.9 too."""
    if not isinstance(v, str):
        return datetime.datetime.fromisoformat(v)
    s = v[:-1] + "+00:00" if v.endswith("Z") else v
    m = _FRACTION.match(s)
    if m:
        s = "%s.%s%s" % (m.group(1), (m.group(2) + "000000")[:6], m.group(3))
    return datetime.datetime.fromisoformat(s)


def output_value(t: Optional[str], v: Any, fetch_output: Callable[[str], Fetch], name: str) -> Any:
    """An output's value from the result as its Python type."""
    if v is None:
        return None
    if t == "int":
        return int(v)
    if t == "float":
        return float(v)
    if t == "bool":
        return bool(v)
    if t == "datetime":
        return parse_datetime(v)
    if t == "timedelta":
        if isinstance(v, (int, float)):
            return datetime.timedelta(seconds=v)
        m = _DURATION.match(v)
        if not m:
            raise ValueError("output %s: %r is not a duration" % (name, v))
        sign = -1 if m.group(1) == "-" else 1
        w, d, h, mi, s = (float(x or 0) for x in m.groups()[1:])
        return sign * datetime.timedelta(weeks=w, days=d, hours=h, minutes=mi, seconds=s)
    if t in ("File", "Dir") and isinstance(v, dict):
        cls = Dir if t == "Dir" else File
        return cls(name=name, object=v.get("object"), size=v.get("size"), _fetch=fetch_output(name))
    return v


def is_dataframe(value: object) -> bool:
    """A pandas DataFrame, told by its class (pandas is never imported here)."""
    cls = type(value)
    return cls.__name__ == "DataFrame" and cls.__module__.split(".")[0] == "pandas" and hasattr(value, "to_csv")
