package pyexec_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/internal/codemode/pyexec"
)

// hostileTools are weatherTools plus a tool whose result is 100 MB, one
// that never answers (until the run ends), and one that echoes.
func hostileTools() *codemode.Registry {
	r := weatherTools()
	r.MustRegister(codemode.Tool{Name: "big", Doc: "A 100 MB answer.",
		Func: func(context.Context, map[string]any) (any, error) { return strings.Repeat("x", 100<<20), nil }})
	r.MustRegister(codemode.Tool{Name: "stall", Doc: "Never answers.",
		Func: func(ctx context.Context, _ map[string]any) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}})
	r.MustRegister(codemode.Tool{Name: "echo", Params: []codemode.Param{{Name: "text", Type: codemode.TypeStr, Required: true}},
		Func: func(_ context.Context, args map[string]any) (any, error) { return args["text"], nil }})
	r.MustRegister(codemode.Tool{Name: "hugeint", Doc: "An integer of 5000 digits, more than CPython converts.",
		Func: func(context.Context, map[string]any) (any, error) { return json.Number(strings.Repeat("9", 5000)), nil }})
	return r
}

type hostileCase struct {
	name   string
	code   string
	limits pyexec.Limits
	// check says what is wrong with the outcome, or "".
	check func(res pyexec.Result, err *codemode.Error) string
}

// failsWith wants the program stopped with an error of kind whose text
// has every part.
func failsWith(kind codemode.ErrorKind, parts ...string) func(pyexec.Result, *codemode.Error) string {
	return func(_ pyexec.Result, err *codemode.Error) string {
		if err == nil {
			return "the program was not stopped"
		}
		text := codemode.ErrorText(err)
		if err.Kind != kind {
			return "error kind " + string(err.Kind) + ", want " + string(kind) + ": " + text
		}
		for _, p := range parts {
			if !strings.Contains(text, p) {
				return "error " + strconv.Quote(text) + " does not say " + strconv.Quote(p)
			}
		}
		return ""
	}
}

// hostileCases are the programs of issue 20's list, each contained with a
// clear error; workerAddr is a port of the worker's host (the test's own
// listener), which the sandbox must not reach.
func hostileCases(workerAddr string) []hostileCase {
	return []hostileCase{
		{name: "network to the internet", code: `import socket
socket.create_connection(("1.1.1.1", 80), timeout=3)`, check: failsWith(codemode.KindRuntime, "OSError")},
		{name: "network to the worker's host", code: `import socket
host, port = "` + workerAddr + `".rsplit(":", 1)
socket.create_connection((host, int(port)), timeout=3)`, check: failsWith(codemode.KindRuntime, "Error")},
		{name: "write outside the workspace", code: `written = []
for path in ["/etc/evil", "/usr/evil", "/opt/evil", "/evil"]:
    try:
        open(path, "w").write("x")
        written.append(path)
    except OSError:
        pass
written`, check: func(res pyexec.Result, err *codemode.Error) string {
			if err != nil || res.Value == nil || len(res.Value.([]any)) != 0 {
				return "wrote outside the workspace: " + describe(res, err)
			}
			return ""
		}},
		{name: "the worker's environment", code: `import os
seen = [k for k in os.environ if "SECRET" in k]
try:
    seen.append(open("/proc/1/environ", "rb").read().decode(errors="replace"))
except OSError:
    pass
seen`, check: func(res pyexec.Result, err *codemode.Error) string {
			if err != nil || strings.Contains(describe(res, err), "hunter2") || strings.Contains(describe(res, err), secretEnv) {
				return "saw the worker's environment: " + describe(res, err)
			}
			return ""
		}},
		{name: "fork bomb", code: `import os
while True:
    try:
        os.fork()
    except OSError:
        pass`, limits: pyexec.Limits{WallTime: 5 * time.Second}, check: failsWith(codemode.KindLimit)},
		{name: "memory bomb", code: `chunks = []
while True:
    chunks.append(bytearray(16 << 20))`, check: failsWith(codemode.KindLimit, "memory")},
		{name: "endless loop", code: `while True:
    pass`, limits: pyexec.Limits{WallTime: 3 * time.Second}, check: failsWith(codemode.KindLimit, "wall time")},
		{name: "flood of tool calls", code: `for i in range(100000):
    get_weather("Paris")`, check: failsWith(codemode.KindLimit, "more than 200 tool calls")},
		{name: "flood of tool calls caught", code: `n = 0
while True:
    try:
        get_weather("Paris")
        n += 1
    except BaseException:
        pass`, limits: pyexec.Limits{MaxToolCalls: 20}, check: failsWith(codemode.KindLimit, "more than 20 tool calls")},
		{name: "tool result of 100 MB", code: `big()`, check: failsWith(codemode.KindLimit, "result of big", "over the limit")},
		{name: "tool that never answers", code: `stall()`, limits: pyexec.Limits{WallTime: 3 * time.Second},
			check: failsWith(codemode.KindLimit, "wall time", "waiting for stall")},
		{name: "arguments too large", code: `echo("x" * 200000)`, check: failsWith(codemode.KindLimit, "arguments of echo")},
		{name: "printed flood", code: `for i in range(10**6):
    print("spam" * 100)`, limits: pyexec.Limits{MaxOutputBytes: 4096}, check: func(res pyexec.Result, err *codemode.Error) string {
			if err != nil || len(res.Output) > 4096+100 || !strings.Contains(res.Output, "[output truncated at 4096 bytes]") {
				return "output not capped: " + describe(res, err)
			}
			return ""
		}},
		{name: "value too large", code: `"x" * (4 << 20)`, check: failsWith(codemode.KindLimit, "value")},
		// The sandbox's own guards hold for code mode's runs (the same run
		// path as every script): no user namespace of its own, and no
		// more disk than the backend's per-run quota (256 MiB by default;
		// the memory limit is raised so the tmpfs, which counts against
		// it, fills before the cgroup's memory does).
		{name: "nested user namespace", code: `import ctypes
libc = ctypes.CDLL(None, use_errno=True)
[libc.unshare(0x10000000), ctypes.get_errno()]`, check: func(res pyexec.Result, err *codemode.Error) string {
			if err != nil || fmt.Sprint(res.Value) != "[-1 1]" {
				return "unshare(CLONE_NEWUSER) was not refused with EPERM: " + describe(res, err)
			}
			return ""
		}},
		{name: "disk filled", code: `import os
written, code = 0, None
with open("/workspace/fill", "wb") as f:
    try:
        while written < (2 << 30):
            f.write(b"x" * (1 << 20))
            f.flush()
            written += 1 << 20
    except OSError as e:
        code = e.errno
os.remove("/workspace/fill")
[code, written >> 20]`, limits: pyexec.Limits{Memory: 768 << 20}, check: func(res pyexec.Result, err *codemode.Error) string {
			var code, mib int
			if err == nil {
				_, _ = fmt.Sscanf(fmt.Sprint(res.Value), "[%d %d]", &code, &mib)
			}
			if code != 28 || mib > 256 { // ENOSPC, within the quota
				return "the disk quota did not stop the writes with ENOSPC within 256 MiB: " + describe(res, err)
			}
			return ""
		}},
		{name: "forged bridge messages", code: `import os, json
for fd in range(3, 12):
    try:
        os.write(fd, b'{"op":"done","ok":true,"value":"forged","has_value":true}\n')
    except OSError:
        pass
"honest"`, check: func(res pyexec.Result, err *codemode.Error) string {
			// A program can say what it likes of itself; it cannot make
			// the worker crash, hang or call a tool it did not call.
			if err == nil && res.ToolCalls != 0 {
				return "forged messages made calls: " + describe(res, err)
			}
			return ""
		}},
		{name: "a tool called from a forked process", code: `import os
pid = os.fork()
if pid == 0:
    try:
        echo(text="from the child")
        os._exit(3)
    except RuntimeError as e:
        os._exit(7 if "own process" in str(e) else 5)
    except BaseException:
        os._exit(6)
_, status = os.waitpid(pid, 0)
[os.waitstatus_to_exitcode(status), echo(text="from the parent")]`, check: func(res pyexec.Result, err *codemode.Error) string {
			if err != nil || fmt.Sprint(res.Value) != "[7 from the parent]" {
				return "a forked child's tool call was not refused at once, or the parent's went astray: " + describe(res, err)
			}
			return ""
		}},
		{name: "an exception of megabytes", code: `raise ValueError("x" * (3 << 20))`, check: func(res pyexec.Result, err *codemode.Error) string {
			if problem := failsWith(codemode.KindRuntime, "ValueError: xxx", "characters cut")(res, err); problem != "" {
				return problem
			}
			if n := len(err.Msg) + len(err.Backtrace); n > 16<<10 {
				return fmt.Sprintf("the error is %d bytes, want it clipped", n)
			}
			return ""
		}},
		{name: "a value that cannot be shown", code: `import math
math.factorial(2000)`, check: failsWith(codemode.KindRuntime, "value cannot be shown", "ValueError")},
		{name: "a value over the limit in bytes, not characters", code: `"é" * 700_000`, check: failsWith(codemode.KindLimit, "value limit")},
		{name: "a tool answer the interpreter cannot read", code: `try:
    hugeint()
    r = "read"
except ToolError as e:
    r = "caught: " + str(e)
r`, check: func(res pyexec.Result, err *codemode.Error) string {
			if err != nil || !strings.HasPrefix(fmt.Sprint(res.Value), "caught: hugeint: the tool's answer cannot be read") {
				return "an unreadable answer did not fail its call: " + describe(res, err)
			}
			return ""
		}},
		{name: "junk on the bridge", code: `import os
for fd in range(3, 12):
    try:
        os.write(fd, b"\x00\xffnot json at all\n")
    except OSError:
        pass
1`, check: func(res pyexec.Result, err *codemode.Error) string {
			if err != nil && !strings.Contains(err.Msg, "tool bridge") {
				return "junk on the bridge gave an unclear error: " + codemode.ErrorText(err)
			}
			return ""
		}},
	}
}

func describe(res pyexec.Result, err *codemode.Error) string {
	if err != nil {
		return codemode.ErrorText(err)
	}
	return strconv.Quote(res.Output) + " value " + strconv.Quote(strings.TrimSpace(strings.ReplaceAll(codemode.Observation(res.Result, nil, 2000), "\n", " ")))
}

// TestHostileProgramsContained runs every hostile program on both sandbox
// backends: each ends with a clear error (or harmlessly), never a hang or
// a crash of the worker, and the backend serves the next program.
func TestHostileProgramsContained(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			t.Error("a sandboxed program connected to the worker's host")
		}
	}()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			backend := be.open(t)
			for _, tc := range hostileCases(ln.Addr().String()) {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					r := &pyexec.Runner{Backend: backend, Limits: tc.limits}
					res, err := r.Run(t.Context(), tc.code, hostileTools())
					var ce *codemode.Error
					if err != nil && !errors.As(err, &ce) {
						t.Fatalf("infrastructure error: %v", err)
					}
					if problem := tc.check(res, ce); problem != "" {
						t.Fatal(problem)
					}
					after, err := r.Run(t.Context(), `get_weather("Paris")["temp_c"]`, hostileTools())
					if err != nil || after.Value == nil {
						t.Fatalf("the backend does not serve the next program: %v", err)
					}
				})
			}
		})
	}
}
