#!/usr/bin/env python3
"""Upload a sample file over plain NATS, as the object store does (docs/api.md).

usage: upload_nats.py HOST:PORT USER PASSWORD FILE

Speaks the NATS text protocol itself (no client library) and writes the
file into the autocoder_samples object store the way every NATS client's
object store does: the content in chunks of at most 128 KiB on
$O.autocoder_samples.C.<nuid>, then one meta message on
$O.autocoder_samples.M.<base64url of the name> with the header
Nats-Rollup: sub and the object's info (name, size, chunks, SHA-256
digest) as JSON. The object is named sha256-<hex of the content>, as a
spec's sample reference wants. Each message is published with a reply
inbox under _INBOX_producer, so JetStream's acknowledgement (or its error)
comes back. Prints the reference to use in a spec: sha256:<hex>[.ext].
"""
import base64, hashlib, json, os, socket, sys, uuid
from datetime import datetime, timezone

BUCKET = "autocoder_samples"
CHUNK = 128 * 1024


class Conn:
    def __init__(self, hostport, user, password):
        host, port = hostport.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=60)
        self.file = self.sock.makefile("rb")
        self.readline()  # INFO {...}
        self.send("CONNECT " + json.dumps({"user": user, "pass": password, "verbose": False,
                                           "pedantic": False, "headers": True}) + "\r\n")

    def send(self, text):
        self.sock.sendall(text.encode())

    def readline(self):
        return self.file.readline().decode().rstrip("\r\n")

    def pub(self, subject, reply, data, headers=None):
        if headers:
            head = ("NATS/1.0\r\n" + "".join("%s: %s\r\n" % kv for kv in headers.items()) + "\r\n").encode()
            line = "HPUB %s %s %d %d\r\n" % (subject, reply, len(head), len(head) + len(data))
            self.sock.sendall(line.encode() + head + data + b"\r\n")
        else:
            self.sock.sendall(("PUB %s %s %d\r\n" % (subject, reply, len(data))).encode() + data + b"\r\n")

    def ack(self):
        """The next JetStream acknowledgement: {"stream": ..., "seq": ...} or an error."""
        while True:
            line = self.readline()
            if line == "PING":
                self.send("PONG\r\n")
            elif line.startswith("-ERR"):
                raise RuntimeError(line)
            elif line.startswith("MSG "):
                size = int(line.split()[-1])
                reply = json.loads(self.file.read(size + 2)[:-2])
                if "error" in reply:
                    raise RuntimeError("JetStream refused: %s" % reply["error"])
                return reply


def upload(hostport, user, password, path):
    data = open(path, "rb").read()
    digest = hashlib.sha256(data).digest()
    name = "sha256-" + digest.hex()
    nc = Conn(hostport, user, password)
    inbox = "_INBOX_producer." + uuid.uuid4().hex
    nc.send("SUB %s.* 1\r\n" % inbox)
    nuid = uuid.uuid4().hex  # any unique token: the chunks' subject
    chunks = [data[i:i + CHUNK] for i in range(0, len(data), CHUNK)]
    for i, chunk in enumerate(chunks):
        nc.pub("$O.%s.C.%s" % (BUCKET, nuid), "%s.%d" % (inbox, i), chunk)
    for _ in chunks:
        nc.ack()
    info = {"name": name, "bucket": BUCKET, "nuid": nuid, "size": len(data), "chunks": len(chunks),
            "mtime": datetime.now(timezone.utc).isoformat().replace("+00:00", "Z"),
            "digest": "SHA-256=" + base64.urlsafe_b64encode(digest).decode()}
    meta = "$O.%s.M.%s" % (BUCKET, base64.urlsafe_b64encode(name.encode()).decode())
    nc.pub(meta, inbox + ".meta", json.dumps(info).encode(), {"Nats-Rollup": "sub"})
    nc.ack()
    ext = os.path.splitext(path)[1]
    return "sha256:" + digest.hex() + (ext if ext[1:].isalnum() and len(ext) <= 17 else "")


if __name__ == "__main__":
    print(upload(*sys.argv[1:]))
