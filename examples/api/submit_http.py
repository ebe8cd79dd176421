#!/usr/bin/env python3
"""Submit a job to autocoder over HTTP and wait for its result (docs/api.md).

usage: submit_http.py URL TOKEN SPEC.json [name=path ...]

SPEC.json is a job spec (docs/schemas/JobSpec.json); each name=path is a
sample file, uploaded first. Prints the result object (docs/schemas/Result.json).
Exit 0 when the job succeeded, 1 when it did not, 2 when the spec was refused.
Standard library only.
"""
import json, os, sys, time, urllib.error, urllib.request


def call(method, url, token, body=None, ctype="application/json"):
    req = urllib.request.Request(url, data=body, method=method,
                                 headers={"Authorization": "Bearer " + token, "Content-Type": ctype})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        text = e.read().decode()
        try:
            return e.code, json.loads(text)
        except ValueError:
            return e.code, {"error": text.strip()}


def main(url, token, spec_file, *samples):
    spec = json.load(open(spec_file))
    for arg in samples:  # upload each sample, then refer to it by its object reference
        name, path = arg.split("=", 1)
        status, ref = call("POST", url + "/v1/samples?name=" + os.path.basename(path), token,
                           open(path, "rb").read(), "application/octet-stream")
        spec.setdefault("samples", {})[name] = ref["object"]
    status, reply = call("POST", url + "/v1/jobs", token, json.dumps({"v": 1, "spec": spec}).encode())
    if status != 202:
        print(json.dumps(reply), file=sys.stderr)  # {"error": ..., "field": ...}
        return 2
    while True:  # or follow GET /v1/jobs/{id}/events (Server-Sent Events)
        status, result = call("GET", url + "/v1/jobs/" + reply["job_id"] + "/result?view=slim", token)
        if status == 200:  # finished; ?view=slim leaves the conversation out
            print(json.dumps(result))
            return 0 if result["success"] else 1
        if status not in (202, 404):  # 202: running (the result so far); 404: not stored yet
            print(json.dumps(result), file=sys.stderr)  # {"error": ..., "code": ...}
            return 3
        time.sleep(0.5)


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
