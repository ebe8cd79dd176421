package messages_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/autocoder/autocoder/pkg/messages"
)

// The fuzz targets of the decoders that read what producers and workers
// send. scripts/test.sh runs each for a few seconds; the seeds are the
// f.Add calls and the corpus under testdata/fuzz.

// FuzzDecodeJobSpecJSON: any bytes give a valid spec or a *FieldError,
// never a panic, and a spec that decodes encodes to JSON that decodes to
// the same spec (compared encoded: an empty map and none encode alike).
func FuzzDecodeJobSpecJSON(f *testing.F) {
	f.Add([]byte(`{"prompt":"sum","outputs":{"total":"float"},"options":{"timeout":"30s","max_iterations":3}}`))
	f.Add([]byte(`{"prompt":"p","inputs":{"x":"int"},"samples":{"s":"sha256:` + hex64 + `.csv"},"constraints":["a"]}`))
	f.Add([]byte(`{"prompt":"p","options":{"resources":{"cpu":1,"memory":"512Mi"},"timeout":12.5}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := messages.DecodeJobSpecJSON(data)
		if err != nil {
			requireFieldError(t, err)
			return
		}
		b, err := json.Marshal(spec)
		if err != nil {
			t.Fatalf("marshal a decoded spec: %v", err)
		}
		again, err := messages.DecodeJobSpecJSON(b)
		if err != nil {
			t.Fatalf("a decoded spec re-encoded does not decode: %v\n%s", err, b)
		}
		if b2, err := json.Marshal(again); err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("round trip changed the spec (%v):\n%s\n%s", err, b, b2)
		}
	})
}

// FuzzDecodeAPIRequest: a request decodes or is a *FieldError naming the
// problem; one that decodes has a spec or a run, not both, and an allowed
// reply_to.
func FuzzDecodeAPIRequest(f *testing.F) {
	f.Add([]byte(`{"v":1,"spec":{"prompt":"p","outputs":{"a":"int"}},"reply_to":"autocoder.replies.me"}`))
	f.Add([]byte(`{"v":1,"job_id":"job-1","run":{"from_job":"job-0","args":{"x":"1"}}}`))
	f.Add([]byte(`{"v":1,"spec":{"prompt":"p"},"run":{"from_job":"j"}}`))
	f.Add([]byte(`{"v":1,"spec":null,"reply_to":"autocoder.>"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := messages.DecodeAPIRequest(data)
		if err != nil {
			requireFieldError(t, err)
			return
		}
		if (req.Spec == nil) == (req.Run == nil) {
			t.Fatalf("decoded request with spec %v and run %v: want exactly one", req.Spec, req.Run)
		}
		if err := messages.CheckReplyTo(req.ReplyTo); err != nil {
			t.Fatalf("decoded request with a bad reply_to %q: %v", req.ReplyTo, err)
		}
	})
}

// FuzzDecodeTaskRunRequest: as FuzzDecodeAPIRequest, for task runs.
func FuzzDecodeTaskRunRequest(f *testing.F) {
	f.Add([]byte(`{"v":1,"task":"monthly-report","args":{"month":"3"},"samples":{"s":"sha256:` + hex64 + `"}}`))
	f.Add([]byte(`{"v":1,"task":"../etc"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := messages.DecodeTaskRunRequest(data)
		if err != nil {
			requireFieldError(t, err)
			return
		}
		if !messages.ValidTaskName(req.Task) {
			t.Fatalf("decoded a task run of %q, not a task name", req.Task)
		}
	})
}

// wireMessages are the messages decoded with encoding/json by the
// coordinator, the workers and the clients.
var wireMessages = []func() any{
	func() any { return new(messages.SubmitJob) }, func() any { return new(messages.StageCommand) },
	func() any { return new(messages.StageResult) }, func() any { return new(messages.Result) },
	func() any { return new(messages.Event) }, func() any { return new(messages.DeadLetter) },
	func() any { return new(messages.ReplayRequest) }, func() any { return new(messages.APIReply) },
	func() any { return new(messages.Task) }, func() any { return new(messages.TestReport) },
	func() any { return new(messages.BuildOutput) }, func() any { return new(messages.AcceptanceOutput) },
	func() any { return new(messages.ProfileOutput) }, func() any { return new(messages.Diagnosis) },
}

// FuzzWireMessages: every wire message decodes any bytes without a panic,
// and what decodes is stable: encoded and decoded again, it encodes to the
// same bytes.
func FuzzWireMessages(f *testing.F) {
	f.Add(uint8(0), []byte(`{"v":1,"job_id":"j","spec":{"prompt":"p","options":{"timeout":"1m"}}}`))
	f.Add(uint8(1), []byte(`{"v":1,"job_id":"j","seq":3,"stage":"code","input":{"task":{"prompt":"p"}}}`))
	f.Add(uint8(2), []byte(`{"v":1,"job_id":"j","seq":3,"stage":"run_tests","output":{"passed":1},"usage":{"calls":1}}`))
	f.Add(uint8(3), []byte(`{"v":1,"job_id":"j","status":"succeeded","outputs":{"a":1.5,"b":[1,"x"]},"finished_at":"2026-01-02T03:04:05Z"}`))
	f.Add(uint8(5), []byte(`{"v":1,"stream":"AUTOCODER_STAGE_LLM","stream_seq":7,"data":"eyJhIjoxfQ==","headers":{"A":["b"]}}`))
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		newMsg := wireMessages[int(kind)%len(wireMessages)]
		v := newMsg()
		if json.Unmarshal(data, v) != nil {
			return
		}
		first, err := json.Marshal(v)
		if err != nil {
			return // e.g. a time.Time the decoder accepted and the encoder refuses (year past 9999)
		}
		w := newMsg()
		if err := json.Unmarshal(first, w); err != nil {
			t.Fatalf("%T: its own encoding does not decode: %v\n%s", v, err, first)
		}
		second, err := json.Marshal(w)
		if err != nil || !bytes.Equal(first, second) {
			t.Fatalf("%T: not stable (%v):\n%s\n%s", v, err, first, second)
		}
	})
}

// FuzzParseObjectRef: a reference parses only from its canonical form.
func FuzzParseObjectRef(f *testing.F) {
	f.Add("sha256:" + hex64 + ".csv")
	f.Add("sha256:" + hex64)
	f.Add("sha256:../../etc/passwd")
	f.Fuzz(func(t *testing.T, s string) {
		ref, ok := messages.ParseObjectRef(s)
		if ok && ref.String() != s {
			t.Fatalf("ParseObjectRef(%q) = %q: not its canonical form", s, ref.String())
		}
	})
}

// FuzzParseInputValue: a value that parses is canonical: parsing it again
// gives it back.
func FuzzParseInputValue(f *testing.F) {
	for _, s := range []string{"42", "-0", "1e3", "true", "x y", "+7", ".5", "nan"} {
		f.Add(uint8(0), s)
	}
	types := []messages.Type{messages.TypeStr, messages.TypeInt, messages.TypeFloat, messages.TypeBool, messages.TypeFile}
	f.Fuzz(func(t *testing.T, kind uint8, s string) {
		typ := types[int(kind)%len(types)]
		v, err := messages.ParseInputValue(typ, s)
		if err != nil {
			return
		}
		again, err := messages.ParseInputValue(typ, v)
		if err != nil || again != v {
			t.Fatalf("ParseInputValue(%s, %q) = %q, which parses to %q, %v", typ, s, v, again, err)
		}
	})
}

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func requireFieldError(t *testing.T, err error) {
	t.Helper()
	var fe *messages.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a *FieldError", err, err)
	}
	if err.Error() == "" {
		t.Fatal("empty error")
	}
}
