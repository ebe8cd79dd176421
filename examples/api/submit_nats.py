#!/usr/bin/env python3
"""Submit a job to autocoder over plain NATS and wait for its result (docs/api.md).

usage: submit_nats.py HOST:PORT USER PASSWORD SPEC.json

Speaks the NATS text protocol itself (no client library): asks the
coordinator on autocoder.api.submit, which answers at once with the job ID
or the error naming the field (docs/schemas/APIReply.json), and hears the
result object on the reply_to subject the request names. The reply inbox
is under _INBOX_producer, where a producer's NATS permissions let it read.
Exit 0 when the job succeeded, 1 when it did not, 2 when the spec was refused.
"""
import json, socket, sys, uuid


class Conn:
    def __init__(self, hostport, user, password):
        host, port = hostport.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=120)
        self.file = self.sock.makefile("rb")
        self.readline()  # INFO {...}
        self.send("CONNECT " + json.dumps({"user": user, "pass": password, "verbose": False,
                                           "pedantic": False, "headers": False}) + "\r\n")

    def send(self, text):
        self.sock.sendall(text.encode())

    def readline(self):
        return self.file.readline().decode().rstrip("\r\n")

    def pub(self, subject, reply, payload):
        data = json.dumps(payload).encode()
        self.sock.sendall(("PUB %s %s %d\r\n" % (subject, reply, len(data))).encode() + data + b"\r\n")

    def next_msg(self):
        while True:
            line = self.readline()
            if line == "PING":
                self.send("PONG\r\n")
            elif line.startswith("-ERR"):
                raise RuntimeError(line)
            elif line.startswith("MSG "):
                size = int(line.split()[-1])
                data = self.file.read(size + 2)[:-2]
                return json.loads(data)


def main(hostport, user, password, spec_file):
    nc = Conn(hostport, user, password)
    inbox, reply_to = "_INBOX_producer." + uuid.uuid4().hex, "autocoder.replies." + uuid.uuid4().hex
    nc.send("SUB %s 1\r\nSUB %s 2\r\n" % (inbox, reply_to))
    request = {"v": 1, "spec": json.load(open(spec_file)), "reply_to": reply_to}
    nc.pub("autocoder.api.submit", inbox, request)
    reply = nc.next_msg()  # {"job_id": ...} or {"error": ..., "field": ...}
    print(json.dumps(reply), file=sys.stderr)
    if reply.get("error"):
        return 2
    result = nc.next_msg()  # the result object, published on reply_to when the job ends
    print(json.dumps(result))
    return 0 if result["success"] else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
