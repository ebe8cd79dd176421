package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

// toolServerEnv, set to a NATS URL, makes this program the stock_level
// tool server instead of the example.
const toolServerEnv = "CODEMODE_EXAMPLE_TOOL_SERVER"

// The job: a question that needs both tools, answered in turns.
var spec = messages.JobSpec{Mode: messages.ModeCodeMode, CodeModeSpec: messages.CodeModeSpec{
	Message:  "Which of the SKUs A-100, B-200 and C-300 are low on stock (under 20 units), and what would restocking each to 50 units cost?",
	Tools:    []string{"stock_level", "price"},
	Skills:   []string{"Money is in euros with two decimals. Restocking cost = (50 - units) * unit price."},
	MaxTurns: 4,
}}

func main() {
	if url := os.Getenv(toolServerEnv); url != "" {
		os.Exit(serveStockTool(url, os.Stdin, os.Stdout))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res, err := run(ctx, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "codemode example:", err)
		os.Exit(1)
	}
	out, _ := json.MarshalIndent(res.CodeMode, "", "  ")
	fmt.Println(string(out))
	if !res.Success {
		fmt.Fprintln(os.Stderr, "job failed:", res.Error)
		os.Exit(1)
	}
}

// run starts NATS, the tools and the system, and runs the job.
func run(ctx context.Context, log io.Writer) (*messages.Result, error) {
	state, err := os.MkdirTemp("", "codemode-example-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(state)
	// Loopback only, and no auth: this demo's NATS lives as long as the
	// example and is reached by the example's own tool process.
	srv, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: filepath.Join(state, "nats"), Listen: "127.0.0.1:-1", NoAuth: true})
	if err != nil {
		return nil, err
	}
	defer srv.Shutdown()

	stopTool, err := startStockTool(srv.ClientURL())
	if err != nil {
		return nil, err
	}
	defer stopTool()

	cfg, stopModel, err := modelConfig(log)
	if err != nil {
		return nil, err
	}
	defer stopModel()
	cfg.StateDir, cfg.NATSURL, cfg.Sandbox, cfg.LogLevel = state, srv.ClientURL(), "process", "warn"
	st, err := wiring.Start(ctx, wiring.Options{Config: cfg, Roles: []wiring.Role{wiring.RoleLocal}})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	svc, err := codemode.ServeTool(st.Conn, priceTool)
	if err != nil {
		return nil, err
	}
	defer func() { _ = svc.Stop() }()

	id := client.NewJobID()
	if err := st.Client.Submit(ctx, id, spec); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "job %s submitted (mode: codemode, tools %s)\n", id, strings.Join(spec.Tools, ", "))
	return st.Client.Watch(ctx, id, nil)
}

// priceTool is served by this process.
var priceTool = codemode.Tool{
	Name: "price", Doc: "Unit price of a SKU in euros.",
	Params: []codemode.Param{{Name: "sku", Type: codemode.TypeStr, Required: true}},
	Func: func(_ context.Context, args map[string]any) (any, error) {
		p, ok := map[string]float64{"A-100": 2.5, "B-200": 12.0, "C-300": 0.8}[args["sku"].(string)]
		if !ok {
			return nil, fmt.Errorf("no price for %v", args["sku"])
		}
		return p, nil
	},
}

// modelConfig is the configuration with the real model when
// OPENAI_API_KEY is set, else with the scripted transcript.
func modelConfig(log io.Writer) (config.Config, func(), error) {
	cfg := config.FromEnv()
	if cfg.OpenAIAPIKey != "" {
		return cfg, func() {}, nil
	}
	path := filepath.Join(exampleDir(), "transcript.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, nil, fmt.Errorf("no OPENAI_API_KEY and no transcript: %w", err)
	}
	t, err := fakellm.LoadTranscript(bytes.NewReader(data))
	if err != nil {
		return cfg, nil, err
	}
	fake := fakellm.New()
	fake.Play(t)
	fmt.Fprintf(log, "SCRIPTED MODEL: no OPENAI_API_KEY is set, so the model's replies are replayed from %s (%s).\n", path, t.Label)
	cfg.OpenAIBaseURL, cfg.OpenAIAPIKey = fake.URL(), "scripted"
	return cfg, fake.Close, nil
}

// exampleDir is this example's folder: the working directory when run
// from it (go test), else examples/codemode under it (go run from the root).
func exampleDir() string {
	if _, err := os.Stat("transcript.json"); err == nil {
		return "."
	}
	return filepath.Join("examples", "codemode")
}

// startStockTool starts this program again as the stock_level server and
// waits until it serves.
func startStockTool(natsURL string) (stop func(), err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-test.run=^$") // the flag is ignored by main, and keeps a test binary from running tests
	cmd.Env = append(os.Environ(), toolServerEnv+"="+natsURL)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop = func() { _ = stdin.Close(); _ = cmd.Wait() }
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		stop()
		return nil, errors.Join(errors.New("the stock_level tool process did not start"), err)
	}
	return stop, nil
}
