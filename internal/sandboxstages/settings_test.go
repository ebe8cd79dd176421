package sandboxstages_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/bus/bustest"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandboxstages"
	"github.com/autocoder/autocoder/internal/secretsource"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestJobSandboxSettings: a job's env_vars and secrets reach its runs'
// environment, every secret value is cut out of what the run returns (its
// output and its outputs), the cache key part hashes the values, and
// options.python picks the handlers of that version (a version the worker
// does not offer is a permanent failure saying which it has).
func TestJobSandboxSettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "DB_PASSWORD"), []byte("hunter2-e2e\n"), 0o600)
	src := secretsource.New(dir, []byte("key"))
	leaky := func(spec sandbox.RunSpec) (sandbox.RunResult, error) {
		// A script that prints and writes every variable it got.
		var b strings.Builder
		for _, k := range []string{"REGION", "DB_PASSWORD", "PYTHONHASHSEED"} {
			b.WriteString(k + "=" + spec.EnvVars[k] + "\n")
		}
		return sandbox.RunResult{Stdout: []byte(b.String()), Outputs: map[string][]byte{"env": []byte(b.String())}}, nil
	}
	own, other := &fakeBackend{run: leaky}, &fakeBackend{run: leaky}
	_, mux := newSettingsStages(t, sandboxstages.Config{Backend: own, Samples: &fetcher{}, Secrets: src,
		Python: "3.11", PythonBackends: map[string]sandbox.Backend{"3.12": other}})
	exec := newKeyExecutor(t, mux)

	in := messages.AcceptanceInput{Image: "env-", Code: "print(1)", Outputs: map[string]messages.Type{"env": messages.TypeStr}}
	cmd := command(t, messages.StageAcceptance, in)
	cmd.Settings = &messages.StageSettings{EnvVars: map[string]string{"REGION": "north", "PYTHONHASHSEED": "7"}, Secrets: []string{"DB_PASSWORD"}}
	out, _, err := mux.Serve(ctxT(t), cmd)
	if err != nil {
		t.Fatal(err)
	}
	var acc messages.AcceptanceOutput
	if err := json.Unmarshal(out.Value, &acc); err != nil {
		t.Fatal(err)
	}
	env, _ := acc.Outputs["env"].(string)
	if !strings.Contains(env, "REGION=north") || !strings.Contains(env, "DB_PASSWORD=[secret DB_PASSWORD]") ||
		!strings.Contains(env, "PYTHONHASHSEED=0") { // the harness's own variables win
		t.Errorf("output env %q", env)
	}
	if strings.Contains(acc.Output+env, "hunter2-e2e") {
		t.Errorf("the secret's value came back: %q %q", acc.Output, env)
	}
	if got := own.runs[0].EnvVars["DB_PASSWORD"]; got != "hunter2-e2e" {
		t.Errorf("the sandbox got DB_PASSWORD=%q", got)
	}
	// The cache key holds a hash of the secret's value: a rotated secret
	// is another key.
	k1, err := exec.Key(ctxT(t), cmd)
	if err != nil || k1 == "" {
		t.Fatalf("key %q, %v", k1, err)
	}
	os.WriteFile(filepath.Join(dir, "DB_PASSWORD"), []byte("rotated-e2e\n"), 0o600)
	if k2, _ := exec.Key(ctxT(t), cmd); k2 == k1 {
		t.Error("a rotated secret keeps the cache key")
	}

	// Python 3.12 goes to its handlers' backend.
	cmd.Settings.Python = "3.12"
	if _, _, err := mux.Serve(ctxT(t), cmd); err != nil || len(other.runs) != 1 || len(own.runs) != 1 {
		t.Errorf("python 3.12: %v, runs own %d other %d", err, len(own.runs), len(other.runs))
	}
	cmd.Settings.Python = "3.9"
	if _, _, err := mux.Serve(ctxT(t), cmd); !isPermanent(err) || !strings.Contains(err.Error(), "offers Python 3.11, 3.12, not 3.9") {
		t.Errorf("python 3.9: %v", err)
	}
	// A secret the worker does not have fails the stage at once, naming it.
	cmd.Settings = &messages.StageSettings{Secrets: []string{"MISSING_TOKEN"}}
	if _, _, err := mux.Serve(ctxT(t), cmd); !isPermanent(err) || !strings.Contains(err.Error(), "secret MISSING_TOKEN") {
		t.Errorf("missing secret: %v", err)
	}
	if _, err := exec.Key(ctxT(t), cmd); !isPermanent(err) {
		t.Errorf("the key of a missing secret: %v", err)
	}
	_, bare := newSettingsStages(t, sandboxstages.Config{Backend: own, Samples: &fetcher{}})
	if _, _, err := bare.Serve(ctxT(t), cmd); !isPermanent(err) || !strings.Contains(err.Error(), "no secret source") {
		t.Errorf("a worker without a secret source: %v", err)
	}
}

func newSettingsStages(t *testing.T, cfg sandboxstages.Config) (*sandboxstages.Handlers, *stagework.Mux) {
	t.Helper()
	h, err := sandboxstages.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := stagework.NewMux(messages.DefaultStages())
	h.Register(mux)
	if err := mux.Err(); err != nil {
		t.Fatal(err)
	}
	return h, mux
}

// newKeyExecutor is an executor over mux, for its cache keys.
func newKeyExecutor(t *testing.T, mux *stagework.Mux) *stagework.Executor {
	t.Helper()
	e, err := stagework.NewExecutor(stagework.Config{Mux: mux, Pool: messages.PoolSandbox, Publisher: nopPublisher{}, Jobs: noJobs{}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

type nopPublisher struct{}

func (nopPublisher) PublishJSON(context.Context, string, any, string) error { return nil }

type noJobs struct{}

func (noJobs) PendingStage(context.Context, string, int) (messages.Stage, stagework.JobStatus, error) {
	return "", stagework.JobUnknown, nil
}

// TestAgentBashGetsTheJobsSettings: an agent's bash command runs with the
// job's env_vars, but not its secrets: the model drives that shell, and a
// secret it could print encoded (printenv | base64) would pass any
// redaction. Its environment is built under the job's name.
func TestAgentBashGetsTheJobsSettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "API_TOKEN"), []byte("tok-e2e-secret\n"), 0o600)
	be := bustest.Start(t, bus.ProvisionConfig{MemoryStorage: true})
	printsEnv := func(spec sandbox.RunSpec) (sandbox.RunResult, error) {
		return sandbox.RunResult{Stdout: []byte("REGION=" + spec.EnvVars["REGION"] + " API_TOKEN=" + spec.EnvVars["API_TOKEN"] + "\n")}, nil
	}
	own := &fakeBackend{run: printsEnv}
	_, mux := newSettingsStages(t, sandboxstages.Config{Backend: own, Samples: &fetcher{}, Secrets: secretsource.New(dir, []byte("key")),
		Workspace: sandboxstages.ObjectStoreWorkspace{Obj: be.Resources.Outputs}})
	cmd := command(t, messages.StageAgentTool, messages.AgentToolInput{
		Call:      messages.AgentToolCall{ID: "c1", Name: messages.ToolBash, Arguments: `{"command": "env"}`},
		Workspace: messages.Workspace{}, Image: "env-", Env: messages.BuildInput{Name: "weekly-report"}})
	cmd.Settings = &messages.StageSettings{EnvVars: map[string]string{"REGION": "north"}, Secrets: []string{"API_TOKEN"}}
	out, _, err := mux.Serve(ctxT(t), cmd)
	if err != nil {
		t.Fatal(err)
	}
	var res messages.AgentToolOutput
	if err := json.Unmarshal(out.Value, &res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Result, "REGION=north API_TOKEN=\n") {
		t.Errorf("the model reads %q", res.Result)
	}
	if got, ok := own.runs[0].EnvVars["API_TOKEN"]; ok {
		t.Errorf("the agent's shell got the secret API_TOKEN=%q", got)
	}
	if own.builds[0].Name != "weekly-report" {
		t.Errorf("the environment was built as %q, want the job's name", own.builds[0].Name)
	}
}

// TestAgentToolsKeepSecretsAndTheWorkspace, in the real process sandbox:
// a job's secret is not in the agent's shell, so neither a file a command
// wrote nor an encoded copy of it reaches the model by read_file or the
// job's state by its own files; a command after which tar cannot archive
// the workspace (a file it cannot read) loses its changes and says so,
// rather than dropping that file from the workspace.
func TestAgentToolsKeepSecretsAndTheWorkspace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "API_TOKEN"), []byte("tok-e2e-secret\n"), 0o600)
	be := bustest.Start(t, bus.ProvisionConfig{MemoryStorage: true})
	ws := sandboxstages.ObjectStoreWorkspace{Obj: be.Resources.Outputs}
	_, mux := newSettingsStages(t, sandboxstages.Config{Backend: newProcessBackend(t), Samples: &fetcher{}, Secrets: secretsource.New(dir, []byte("key")),
		Workspace: ws})
	call := agentToolCaller(t, mux, &messages.StageSettings{Secrets: []string{"API_TOKEN"}})
	ref, err := ws.Put(ctxT(t), []byte("def f():\n    return 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	start := messages.Workspace{"solution.py": ref}
	wrote := call(start, messages.ToolBash, `{"command": "env > env.txt; env | base64 > env.b64; echo \"TOKEN = '$API_TOKEN'\" >> solution.py; env | base64"}`)
	if wrote.Verdict != messages.VerdictOK || wrote.Workspace["env.txt"] == "" || wrote.Workspace["env.b64"] == "" {
		t.Fatalf("bash: %+v", wrote)
	}
	encoded := base64.StdEncoding.EncodeToString([]byte("tok-e2e-secret"))
	for _, f := range []string{"env.txt", "env.b64"} {
		read := call(wrote.Workspace, messages.ToolReadFile, `{"path": "`+f+`"}`)
		plain, _ := base64.StdEncoding.DecodeString(strings.ReplaceAll(read.Result, "\n", ""))
		if seen := read.Result + string(plain) + strings.Join(slices.Collect(maps.Values(read.Files)), ""); strings.Contains(seen, "tok-e2e-secret") {
			t.Errorf("read_file %s gave %q: the secret reached the model", f, read.Result)
		}
	}
	if plain, _ := base64.StdEncoding.DecodeString(wrote.Result); strings.Contains(wrote.Result+string(plain), "tok-e2e-secret") || strings.Contains(wrote.Result, encoded[:12]) {
		t.Errorf("bash gave %q: the secret reached the model", wrote.Result)
	}
	if strings.Contains(wrote.Files["solution.py"], "tok-e2e-secret") {
		t.Errorf("the job's own file holds the secret: %q", wrote.Files["solution.py"])
	}

	locked := call(start, messages.ToolBash, `{"command": "echo x > new.txt; chmod 000 solution.py"}`)
	if locked.Workspace["solution.py"] != ref || locked.Workspace["new.txt"] != "" || !strings.Contains(locked.Result, "changes are lost") {
		t.Errorf("after a command tar could not archive: workspace %v, result %q; want it as it was, and said", locked.Workspace, locked.Result)
	}
}

// identifiedBackend is a fake backend that says what it runs on.
type identifiedBackend struct {
	*fakeBackend
	id string
}

func (b identifiedBackend) Identity() string { return b.id }

// TestKeyHoldsWhatRunsRunOn: a sandbox stage that runs code is cached under
// what it runs on (sandbox.Identified), so a worker moved to another
// interpreter or base image does not serve the results of the old one.
func TestKeyHoldsWhatRunsRunOn(t *testing.T) {
	key := func(id string, stage messages.Stage, in any) string {
		_, mux := newSettingsStages(t, sandboxstages.Config{Backend: identifiedBackend{&fakeBackend{}, id}, Samples: &fetcher{}})
		k, err := newKeyExecutor(t, mux).Key(ctxT(t), command(t, stage, in))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	for stage, in := range map[messages.Stage]any{
		messages.StageBuild:    messages.BuildInput{Packages: []string{}},
		messages.StageRunTests: messages.RunTestsInput{Image: "env-", Code: "x = 1", Tests: "def test_x(): pass"},
	} {
		on311 := key("python 3.11.2 (main, Mar 13 2023)", stage, in)
		if again := key("python 3.11.2 (main, Mar 13 2023)", stage, in); again != on311 {
			t.Errorf("%s: the same interpreter gives another key", stage)
		}
		if on312 := key("python 3.12.1 (main, Dec 8 2023)", stage, in); on312 == on311 {
			t.Errorf("%s: Python 3.12 has the key of 3.11", stage)
		}
	}
}

// TestAgentWorkspaceKeepsEmptyDirsAndHardLinks, in the real process
// sandbox: a directory one command made empty is there for the next (mkdir
// out, then a script writes into it), and a hard link a command made (cp
// -l) is kept as a copy of its file, rather than both vanishing between
// calls without the model being told.
func TestAgentWorkspaceKeepsEmptyDirsAndHardLinks(t *testing.T) {
	t.Parallel()
	be := bustest.Start(t, bus.ProvisionConfig{MemoryStorage: true})
	ws := sandboxstages.ObjectStoreWorkspace{Obj: be.Resources.Outputs}
	_, mux := newSettingsStages(t, sandboxstages.Config{Backend: newProcessBackend(t), Samples: &fetcher{}, Workspace: ws})
	call := agentToolCaller(t, mux, nil)
	ref, err := ws.Put(ctxT(t), []byte("ANSWER = 42\n"))
	if err != nil {
		t.Fatal(err)
	}
	made := call(messages.Workspace{"solution.py": ref}, messages.ToolBash, `{"command": "mkdir -p out/deep && cp -l solution.py copy.py"}`)
	if made.Verdict != messages.VerdictOK || made.Workspace["out/deep"] != messages.DirEntry || made.Workspace["copy.py"] == "" {
		t.Fatalf("after mkdir and cp -l: %+v", made)
	}
	used := call(made.Workspace, messages.ToolBash, `{"command": "echo x > out/deep/y.txt && cat copy.py"}`)
	if used.Verdict != messages.VerdictOK || !strings.Contains(used.Result, "ANSWER = 42") || used.Workspace["out/deep/y.txt"] == "" {
		t.Errorf("the next command: %q, workspace %v", used.Result, used.Workspace)
	}
	if _, ok := used.Workspace["out/deep"]; ok {
		t.Errorf("a directory with a file in it kept its own entry: %v", used.Workspace)
	}
	listed := call(made.Workspace, messages.ToolListFiles, `{"path": "out"}`)
	if !strings.Contains(listed.Result, "deep") {
		t.Errorf("list_files out: %q, want the empty directory", listed.Result)
	}
}

// agentToolCaller calls agent tools through mux with the job's settings
// (nil: none) and returns their output.
func agentToolCaller(t *testing.T, mux *stagework.Mux, settings *messages.StageSettings) func(messages.Workspace, string, string) messages.AgentToolOutput {
	return func(workspace messages.Workspace, name, args string) messages.AgentToolOutput {
		t.Helper()
		cmd := command(t, messages.StageAgentTool, messages.AgentToolInput{
			Call: messages.AgentToolCall{ID: "c", Name: name, Arguments: args}, Workspace: workspace, Timeout: messages.Duration(time.Minute)})
		cmd.Settings = settings
		out, _, err := mux.Serve(ctxT(t), cmd)
		if err != nil {
			t.Fatalf("%s %s: %v", name, args, err)
		}
		var res messages.AgentToolOutput
		if err := json.Unmarshal(out.Value, &res); err != nil {
			t.Fatal(err)
		}
		return res
	}
}
