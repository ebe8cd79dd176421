package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/httpapi"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

const (
	apiSubmitToken      = "e2e-api-submit-token-0123456789"
	apiProducerPassword = "e2e-api-producer-password"
	apiReadToken        = "e2e-api-read-token-0123456789"
)

// apiSystem is the whole system in this process, reachable as an outside
// producer reaches a deployment: NATS on a TCP port with a producer user,
// the HTTP API with a submit token.
type apiSystem struct {
	st       *wiring.Stack
	natsAddr string
	httpURL  string
}

func startAPISystem(t *testing.T, fake *fakellm.Server) *apiSystem {
	t.Helper()
	requireSandboxTools(t)
	users := filepath.Join(t.TempDir(), "nats-users.yaml")
	if err := os.WriteFile(users, []byte("users:\n  - {user: producer, password: "+apiProducerPassword+", role: producer}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, fake)
	cfg.NATSUsersFile = users
	port := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := wiring.Start(ctx, wiring.Options{Config: cfg, Roles: []wiring.Role{wiring.RoleLocal},
		EmbeddedListen: fmt.Sprintf("127.0.0.1:%d", port)})
	if err != nil {
		t.Fatalf("start stack: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	tokens, err := httpapi.ParseTokens(strings.NewReader("py:submit:" + apiSubmitToken + "\nro:read:" + apiReadToken))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.Handler(st.Client, nil, httpapi.Options{Tokens: tokens}))
	t.Cleanup(srv.Close)
	return &apiSystem{st: st, natsAddr: fmt.Sprintf("127.0.0.1:%d", port), httpURL: srv.URL}
}

// runPython runs a script of examples/api with /usr/bin/python3, a process
// with no Go code of the project, and returns its exit code and output.
func runPython(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, args...)
	cmd.Dir = repoRoot(t)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errb.String()
	}
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, errb.String())
	}
	return 0, out.String(), errb.String()
}

func writeJSON(t *testing.T, name string, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// numbersCode answers 42 and takes the sample numbers, which the
// acceptance run passes as --numbers.
const numbersCode = `import argparse
import os


def answer():
    return 6 * 7


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--numbers", default="/var/inputs/numbers.csv")
    p.parse_args(argv)
    os.makedirs("/var/outputs", exist_ok=True)
    with open("/var/outputs/answer", "w") as f:
        f.write(str(answer()))


if __name__ == "__main__":
    main()
`

// badSpec declares an output type that does not exist.
var badSpec = map[string]any{"prompt": "anything", "outputs": map[string]any{"answer": "complex"}}

// TestSubmitOverHTTPFromPython: a job submitted by a Python script over
// HTTP, with a sample uploaded first, succeeds; its result validates
// against docs/schemas/Result.json; a bad spec is answered at once with
// the error naming the field.
func TestSubmitOverHTTPFromPython(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	scriptBasics(fake, sol(numbersCode))
	sys := startAPISystem(t, fake)
	spec := writeJSON(t, "spec.json", answerSpec())
	sample := filepath.Join(t.TempDir(), "numbers.csv")
	if err := os.WriteFile(sample, []byte("n\n1\n2\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runPython(t, "examples/api/submit_http.py", sys.httpURL, apiSubmitToken, spec, "numbers="+sample)
	if code != 0 {
		t.Fatalf("submit_http.py exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var res messages.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("result: %v\n%s", err, out)
	}
	if !res.Success || fmt.Sprint(res.Outputs["answer"]) != "42" || res.Spec == nil || len(res.Spec.Samples) != 1 {
		t.Errorf("result: success %v outputs %v spec %+v, want 42 with the uploaded sample", res.Success, res.Outputs, res.Spec)
	}
	validate(t, "Result", writeJSON(t, "result.json", json.RawMessage(out)))

	code, out, errOut = runPython(t, "examples/api/submit_http.py", sys.httpURL, apiSubmitToken, writeJSON(t, "bad.json", badSpec))
	var reply messages.APIReply
	if code != 2 || json.Unmarshal([]byte(errOut), &reply) != nil || reply.Field != "spec.outputs.answer" || reply.JobID != "" {
		t.Errorf("bad spec: exit %d, reply %s (want exit 2 and the field spec.outputs.answer)\nstdout: %s", code, errOut, out)
	}
	validate(t, "APIReply", writeJSON(t, "reply.json", reply))

	// The finished job runs on new data, and as a named task, over HTTP.
	upload := postJSON(t, sys.httpURL+"/v1/samples?name=more.csv", "text/csv", "n\n5\n", http.StatusCreated)
	body := fmt.Sprintf(`{"samples":{"numbers":%q}}`, upload["object"])
	run := postJSON(t, sys.httpURL+"/v1/jobs/"+res.JobID+"/run", "application/json", body, http.StatusAccepted)
	requireSucceeded(t, sys.st.Client, fmt.Sprint(run["job_id"]))
	if _, err := sys.st.Client.RegisterTask(context.Background(), "answer", res.JobID, "", nil); err != nil {
		t.Fatal(err)
	}
	task := postJSON(t, sys.httpURL+"/v1/tasks/answer/run", "application/json", `{}`, http.StatusAccepted)
	requireSucceeded(t, sys.st.Client, fmt.Sprint(task["job_id"]))
	postJSON(t, sys.httpURL+"/v1/tasks/nope/run", "application/json", `{}`, http.StatusBadRequest)

	// Writing takes the submit scope: a read token is refused.
	code, _, errOut = runPython(t, "examples/api/submit_http.py", sys.httpURL, apiReadToken, spec)
	if code != 2 || !strings.Contains(errOut, "submit scope") {
		t.Errorf("read token: exit %d, %s; want refused for the submit scope", code, errOut)
	}
}

// TestSubmitOverNATSFromPython: a Python script speaking the NATS protocol
// itself, as the producer user, gets the job ID from autocoder.api.submit
// at once and the result on its reply_to subject; a bad spec gets the
// error in the reply.
func TestSubmitOverNATSFromPython(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	scriptBasics(fake, sol(code("6 * 7")))
	sys := startAPISystem(t, fake)

	code, out, errOut := runPython(t, "examples/api/submit_nats.py", sys.natsAddr, "producer", apiProducerPassword,
		writeJSON(t, "spec.json", answerSpec()))
	if code != 0 {
		t.Fatalf("submit_nats.py exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var res messages.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil || !res.Success || fmt.Sprint(res.Outputs["answer"]) != "42" {
		t.Errorf("result on reply_to: %v %s", err, out)
	}
	var reply messages.APIReply
	if err := json.Unmarshal([]byte(errOut), &reply); err != nil || reply.JobID != res.JobID {
		t.Errorf("reply %q: want the job id %s of the result", errOut, res.JobID)
	}

	code, _, errOut = runPython(t, "examples/api/submit_nats.py", sys.natsAddr, "producer", apiProducerPassword,
		writeJSON(t, "bad.json", badSpec))
	reply = messages.APIReply{}
	if code != 2 || json.Unmarshal([]byte(errOut), &reply) != nil || reply.Field != "spec.outputs.answer" {
		t.Errorf("bad spec: exit %d, reply %s; want exit 2 and the field", code, errOut)
	}
}

// postJSON posts body with the submit token, checks the status and
// decodes the JSON answer.
func postJSON(t *testing.T, url, ctype, body string, want int) map[string]any {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+apiSubmitToken)
	req.Header.Set("Content-Type", ctype)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != want {
		t.Fatalf("POST %s: %d %v %v; want %d", url, resp.StatusCode, out, err, want)
	}
	return out
}

// requireSucceeded waits for job id to finish and fails unless it succeeded.
func requireSucceeded(t *testing.T, c *client.Client, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := c.Watch(ctx, id, nil)
	if err != nil || !res.Success {
		t.Fatalf("job %s: %v %+v", id, err, res)
	}
}

// validate checks the JSON file against docs/schemas/<schema>.json with
// Python's jsonschema, an implementation that shares no code with ours.
func validate(t *testing.T, schema, file string) {
	t.Helper()
	script := `import json, sys, jsonschema
jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))`
	if code, _, errOut := runPython(t, "-c", script, filepath.Join("docs", "schemas", schema+".json"), file); code != 0 {
		t.Errorf("%s does not validate against docs/schemas/%s.json:\n%s", file, schema, errOut)
	}
}
