package sandboxtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/sandbox"
)

// echoProgram answers each line of its stdin at once, and says bye at EOF.
const echoProgram = `import sys
for line in sys.stdin:
    sys.stdout.write("echo: " + line)
    sys.stdout.flush()
sys.stdout.write("bye\n")
`

// testStdioConversation: RunSpec.Stdio talks with the command line by
// line (each answer arrives before the next line is sent: nothing holds
// a line back), closing stdin is EOF to it, and its stdout goes to the
// bridge, not RunResult.Stdout.
func testStdioConversation(t *testing.T, f *fixture) {
	var got []string
	res := f.python(t, echoProgram, func(s *sandbox.RunSpec) {
		s.Stdio = func(_ context.Context, stdin io.WriteCloser, stdout io.Reader) error {
			r := bufio.NewReader(stdout)
			for i := range 3 {
				if _, err := fmt.Fprintf(stdin, "line %d\n", i); err != nil {
					return err
				}
				ans, err := r.ReadString('\n')
				if err != nil {
					return fmt.Errorf("answer %d: %w", i, err)
				}
				got = append(got, ans)
			}
			if err := stdin.Close(); err != nil {
				return err
			}
			rest, err := io.ReadAll(r)
			got = append(got, string(rest))
			return err
		}
	})
	if res.ExitCode != 0 || len(res.Stdout) != 0 {
		t.Fatalf("exit %d, stdout %q (want 0 and nothing: the bridge had it)\n%s", res.ExitCode, res.Stdout, dump(res))
	}
	want := "echo: line 0\n|echo: line 1\n|echo: line 2\n|bye\n"
	if strings.Join(got, "|") != want {
		t.Fatalf("conversation %q, want %q", strings.Join(got, "|"), want)
	}
}

// testStdioFailureKills: a bridge that fails ends the run at once (the
// command would sleep past the test), and Run returns its error.
func testStdioFailureKills(t *testing.T, f *fixture) {
	tok := token(t)
	boom := errors.New("bridge gave up")
	spec := sandbox.RunSpec{Env: f.env, Timeout: 10 * time.Minute,
		Argv: []string{"python", "-c", "import sys, time\nprint('ready', flush=True)\ntime.sleep(3600) # " + tok}}
	spec.Stdio = func(_ context.Context, _ io.WriteCloser, stdout io.Reader) error {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil || line != "ready\n" {
			return fmt.Errorf("first line %q: %w", line, err)
		}
		return boom
	}
	res, err := f.b.Run(t.Context(), spec)
	if !errors.Is(err, boom) || !errors.Is(err, sandbox.ErrStdioFailed) {
		t.Fatalf("Run error %v, want the bridge's\n%s", err, dump(res))
	}
	if res.TimedOut {
		t.Fatal("the run waited for its timeout instead of ending with the bridge")
	}
	assertNoLeftovers(t, tok)
	assertServes(t, f)
}

// testStdioTimeout: a command that never answers times out as any run,
// and the bridge waiting for it sees its context end.
func testStdioTimeout(t *testing.T, f *fixture) {
	ended := make(chan struct{})
	res := f.python(t, "import time\ntime.sleep(3600)", func(s *sandbox.RunSpec) {
		s.Timeout = 2 * time.Second
		s.Stdio = func(ctx context.Context, _ io.WriteCloser, stdout io.Reader) error {
			<-ctx.Done()
			close(ended)
			_, err := io.Copy(io.Discard, stdout)
			return err
		}
	})
	if !res.TimedOut {
		t.Fatalf("not timed out\n%s", dump(res))
	}
	select {
	case <-ended:
	default:
		t.Fatal("Run returned before the bridge did")
	}
}
