package egress

import (
	"regexp"
	"strings"

	"github.com/autocoder/autocoder/internal/sandbox"
)

// SocketPath is where a build's sandbox sees its Session's socket.
const SocketPath = "/run/autocoder-egress.sock"

// ProxyPlaceholder, in the command ForwarderScript runs, is replaced by the
// proxy URL it serves (http://127.0.0.1:PORT).
const ProxyPlaceholder = "{proxy}"

// ForwarderScript runs inside a build's sandbox, which has a loopback
// interface and no other network:
//
//	python3 -I -c ForwarderScript SOCKET REPORT -- ARGV...
//
// It listens on a free port of 127.0.0.1, copies each connection to the
// Unix socket SOCKET (a Session), and runs ARGV (pip) with
// ProxyPlaceholder replaced by that address, exiting with its status. When
// REPORT is not "-", it is pip's --report file: after pip, one
// "autocoder-provenance SHA256 URL" line per installed distribution is
// printed (ParseProvenance reads them) and the file is removed. It is no
// security boundary (build code may talk to SOCKET itself): the Session
// behind it is.
const ForwarderScript = `
import hashlib, json, os, socket, subprocess, sys, threading

sock_path, report, argv = sys.argv[1], sys.argv[2], sys.argv[4:]

def pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass

def serve(conn):
    up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        up.connect(sock_path)
    except OSError:
        conn.close()
        return
    back = threading.Thread(target=pipe, args=(up, conn), daemon=True)
    back.start()
    pipe(conn, up)
    back.join()
    conn.close()
    up.close()

listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.bind(("127.0.0.1", 0))
listener.listen(64)

def accept():
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()

threading.Thread(target=accept, daemon=True).start()
proxy = "http://127.0.0.1:%d" % listener.getsockname()[1]
code = subprocess.call([a.replace("{proxy}", proxy) for a in argv])

def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()

if report != "-" and os.path.exists(report):
    try:
        with open(report) as f:
            items = json.load(f).get("install", [])
        for item in items:
            info = item.get("download_info") or {}
            url = info.get("url", "")
            hashes = (info.get("archive_info") or {}).get("hashes") or {}
            digest = hashes.get("sha256", "")
            if not digest and url.startswith("file://") and os.path.isfile(url[7:]):
                digest = sha256_of(url[7:])
            print("autocoder-provenance %s %s" % (digest or "-", url), flush=True)
    except Exception as e:
        print("autocoder-provenance: unreadable pip report: %s" % e, flush=True)
    os.remove(report)
sys.stdout.flush()
sys.exit(code)
`

// ForwarderArgv is the argv that runs argv (whose ProxyPlaceholder is the
// proxy) behind the forwarder, with python the sandbox's interpreter.
func ForwarderArgv(python, report string, argv []string) []string {
	if report == "" {
		report = "-"
	}
	return append([]string{python, "-I", "-c", ForwarderScript, SocketPath, report, "--"}, argv...)
}

var provenanceRe = regexp.MustCompile(`(?m)^autocoder-provenance ([0-9a-f]{64}|-) (\S+)\r?\n?`)

// ParseProvenance returns the artefacts ForwarderScript printed in log,
// and log without those lines.
func ParseProvenance(log string) ([]sandbox.Artifact, string) {
	var arts []sandbox.Artifact
	for _, m := range provenanceRe.FindAllStringSubmatch(log, -1) {
		a := sandbox.Artifact{URL: m[2]}
		if m[1] != "-" {
			a.SHA256 = m[1]
		}
		arts = append(arts, a)
	}
	return arts, provenanceRe.ReplaceAllString(log, "")
}

// Merge is the provenance of a build: pip's report first, then what the
// proxy saw that the report does not name (index pages are not recorded;
// tunnels are).
func Merge(report, proxied []sandbox.Artifact) []sandbox.Artifact {
	out := append([]sandbox.Artifact(nil), report...)
	for _, p := range proxied {
		dup := false
		for i, r := range out {
			if r.URL == p.URL || strings.TrimSuffix(r.URL, "#"+fragment(r.URL)) == p.URL {
				out[i].Bytes = p.Bytes
				if out[i].SHA256 == "" {
					out[i].SHA256 = p.SHA256
				}
				dup = true
			}
		}
		if !dup {
			out = append(out, p)
		}
	}
	return out
}

func fragment(u string) string {
	_, f, _ := strings.Cut(u, "#")
	return f
}
