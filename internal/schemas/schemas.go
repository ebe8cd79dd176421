package schemas

import (
	_ "embed"
	"encoding/json"
	"reflect"
	"time"

	"github.com/invopop/jsonschema"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Message is one wire message: its schema's name (the Go type's) and a
// value of its type.
type Message struct {
	Name  string
	Value any
}

// messageValues are the wire messages, each a value of its Go type. Every
// exported struct of pkg/messages is here or in NotMessages (a test checks).
var messageValues = []any{
	// Producers' messages: jobs, runs, tasks, the message API, results, events.
	messages.SubmitJob{}, messages.JobSpec{}, messages.RunRequest{}, messages.Task{},
	messages.APIRequest{}, messages.APIReply{}, messages.TaskRunRequest{}, messages.TaskRequest{}, messages.TaskReply{},
	messages.Result{}, messages.Event{},
	messages.DeadLetter{}, messages.DeadLetterEntry{}, messages.ReplayRequest{}, messages.ReplayReply{},
	// Stage commands and results, and the payloads of each stage.
	messages.StageCommand{}, messages.StageResult{},
	messages.PlanInput{}, messages.Plan{}, messages.CodeInput{}, messages.Solution{}, messages.CodeOutput{},
	messages.TestsInput{}, messages.Tests{}, messages.PackagesInput{}, messages.Packages{},
	messages.DiagnoseInput{}, messages.Diagnosis{}, messages.FixInput{},
	messages.PatchTestsInput{}, messages.TestPatches{}, messages.PatchTestsOutput{},
	messages.VerifyInput{}, messages.FixVerification{},
	messages.ProfileInput{}, messages.ProfileOutput{},
	messages.ConstraintInput{}, messages.ConstraintOutput{},
	messages.BuildInput{}, messages.BuildOutput{},
	messages.RunTestsInput{}, messages.TestReport{},
	messages.AcceptanceInput{}, messages.AcceptanceOutput{},
	messages.PackageReplacementInput{}, messages.PackageReplacement{},
	// Test strength by mutation (strength.go).
	messages.MutateInput{}, messages.TestStrength{}, messages.StrengthenTestsInput{},
	// The agent backend's stages (Contract 7).
	messages.AgentTurnInput{}, messages.AgentTurnOutput{}, messages.AgentToolInput{}, messages.AgentToolOutput{},
	// Code mode's stages and the code runner's documentation (Contract 8).
	messages.CodeModeToolsInput{}, messages.CodeModeToolsOutput{}, messages.CodeModeTurnInput{},
	messages.CodeModeTurnOutput{}, messages.CodeModeExecInput{}, messages.CodeModeExecOutput{},
	messages.ContextBundle{},
	// Cancelling a job (autocoder.jobs.cancel).
	messages.CancelJob{},
	// The web UI's job index (autocoder_job_index) and iteration history.
	messages.JobSummary{}, messages.Iteration{},
	// Operations: a worker's stage_started notice, its capacity beat, a
	// pool's pause switch, the queues view and the HTTP error body.
	messages.StageStarted{}, messages.WorkerBeat{}, messages.PoolPause{}, messages.QueuesView{}, messages.HTTPError{},
	// A Dir output's manifest in the outputs object store.
	messages.DirManifest{},
}

// NotMessages are the exported structs of pkg/messages that get no schema
// file of their own: Go-side helpers that never travel as JSON, and the
// parts of messages, which are in their message's schema ($defs).
var NotMessages = []string{
	"FieldError", "ObjectRef", // an error value; a reference's string form is what travels
	"Options", "Resources", "StageRecord", "Usage", "ChatMessage", "TaskSpec", "Failure",
	"TestPatch", "SampleRef", "DataColumn", "Constraint", "ConstraintParameters", "ConstraintCheck",
	"Artifact", "TestCase",
	"AgentToolCall", "AgentMessage", "ToolCallRecord", "AgentReport",
	"CodeModeSpec", "CodeModeStep", "CodeModeEvent", "CodeModeResult", "CodeModeFile", "MissingModule",
	"ToolRef", // a parsed tools entry: what travels is its "alias=served_name" string
	"ContextFile", "ContextChunk", "StageContext", "ContextUse", "Cancellation", "RepairRoute",
	"PoolView",
	"RunOptions", "ModelCost", "ManifestFile", "StageSettings",
	"OperatorCounts", "SurvivingMutant", "StrengthReport",
	"StageRow", "StageTable", // the stage table: Go-side facts of each stage, never sent
}

// Messages lists the wire messages, in a stable order.
func Messages() []Message {
	out := make([]Message, len(messageValues))
	for i, v := range messageValues {
		out[i] = Message{Name: reflect.TypeOf(v).Name(), Value: v}
	}
	return out
}

// comments are the Go doc comments of pkg/messages, keyed as
// jsonschema.ExtractGoComments keys them; the test regenerates the file
// from the source, so that the schemas carry descriptions in a binary
// built without the source.
//
//go:embed comments.json
var commentsJSON []byte

// Of is the JSON Schema (draft 2020-12) of message m, with the
// descriptions of comments.json.
func Of(m Message) *jsonschema.Schema {
	var comments map[string]string
	_ = json.Unmarshal(commentsJSON, &comments) // a broken file only loses descriptions; the test catches it
	return OfWith(m, comments)
}

// OfWith is Of with the given comments (jsonschema.Reflector.CommentMap),
// for the test that regenerates comments.json and the schemas together.
func OfWith(m Message, comments map[string]string) *jsonschema.Schema {
	r := &jsonschema.Reflector{
		CommentMap: comments,
		Mapper:     mapper,
		// omitempty is what makes a field optional on the wire.
		RequiredFromJSONSchemaTags: false,
	}
	s := r.Reflect(m.Value)
	s.ID = jsonschema.ID("https://autocoder.dev/schemas/" + m.Name + ".json")
	return s
}

// mapper gives the types whose JSON is not their Go shape, or whose values
// are a closed list, their schema.
func mapper(t reflect.Type) *jsonschema.Schema {
	switch t {
	case reflect.TypeFor[messages.Duration]():
		return &jsonschema.Schema{OneOf: []*jsonschema.Schema{
			{Type: "string", Description: `a Go duration such as "60s" or "2m30s"`},
			{Type: "number", Description: "seconds"},
		}}
	case reflect.TypeFor[time.Time]():
		return &jsonschema.Schema{Type: "string", Format: "date-time"}
	case reflect.TypeFor[messages.Stage]():
		return enum(messages.DefaultStages().Stages())
	case reflect.TypeFor[messages.Type]():
		return enum(messages.OutputTypes)
	case reflect.TypeFor[messages.JobStatus]():
		return enum(messages.Statuses())
	case reflect.TypeFor[messages.EventType]():
		return enum([]messages.EventType{messages.EventJobStarted, messages.EventStageQueued, messages.EventStageStarted, messages.EventStageFinished, messages.EventJobFinished, messages.EventToolCall})
	case reflect.TypeFor[messages.CacheMode]():
		return enum([]messages.CacheMode{messages.CacheAuto, messages.CacheOverride, messages.CacheDisable})
	case reflect.TypeFor[messages.Backend]():
		return enum([]messages.Backend{messages.BackendPipeline, messages.BackendAgent})
	case reflect.TypeFor[messages.FirstPass]():
		return enum([]messages.FirstPass{messages.FirstPassOneRound, messages.FirstPassPlanFirst})
	}
	return nil
}

func enum[T ~string](values []T) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string"}
	for _, v := range values {
		s.Enum = append(s.Enum, string(v))
	}
	return s
}
