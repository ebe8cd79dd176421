package sandboxtest

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/internal/sandbox"
)

// lateWritersCode leaves its work to threads that finish after the main
// module: a non-daemon thread, and a ThreadPoolExecutor never shut down
// (its workers are joined by threading's own exit hooks). A fresh
// interpreter waits for both before it exits (threading._shutdown).
const lateWritersCode = `
import concurrent.futures, threading, time
def late(name):
    time.sleep(0.3)
    open("/var/outputs/" + name, "w").write(name)
    print(name, "done", flush=True)
threading.Thread(target=late, args=("thread",)).start()
concurrent.futures.ThreadPoolExecutor(1).submit(late, "pool")
print("main done", flush=True)
`

// testInterpreterShutdown: a program's threads finish before it exits, as
// in a fresh interpreter, warm or cold.
func testInterpreterShutdown(t *testing.T, f *fixture) {
	res := f.python(t, lateWritersCode, func(s *sandbox.RunSpec) { s.CollectOutputs = true })
	if res.ExitCode != 0 {
		t.Fatalf("run failed: %s", dump(res))
	}
	got := map[string]string{}
	for k, v := range res.Outputs {
		got[k] = string(v)
	}
	if diff := cmp.Diff(map[string]string{"thread": "thread", "pool": "pool"}, got); diff != "" {
		t.Errorf("outputs written by threads after the main module (-want +got):\n%s\n%s", diff, dump(res))
	}
}
