package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// The message API (docs/api.md): producers in any language send requests
// on the API subjects with NATS request-reply, and the coordinator answers
// at once with the job ID, or with the error that names the field, before
// anything is queued. What it accepts it publishes on the jobs stream as a
// SubmitJob, so from there an API job is any other job.

// ErrNoAPI is returned by ServeAPI and the API methods when Config has no
// Resources and JS.
var ErrNoAPI = errors.New("coordinator: the message API needs Config.Resources and Config.JS")

// apiRoute is one API subject (wildcards allowed) and its handler, which
// returns the reply; subject is the request's own (tasks.go reads who
// asks from it). A subject whose messages get no reply has a notice
// handler instead.
type apiRoute struct {
	subject string
	handle  func(c *Coordinator, ctx context.Context, subject string, data []byte) any
	notice  func(c *Coordinator, ctx context.Context, m *nats.Msg)
}

var apiRoutes = []apiRoute{
	{bus.SubjectAPISubmit, func(c *Coordinator, ctx context.Context, _ string, data []byte) any { return c.apiSubmit(ctx, data) }, nil},
	{bus.SubjectAPITaskRun, func(c *Coordinator, ctx context.Context, _ string, data []byte) any { return c.apiTaskRun(ctx, data) }, nil},
	{bus.SubjectAPIDLQReplay, func(c *Coordinator, ctx context.Context, _ string, data []byte) any { return c.apiReplay(ctx, data) }, nil},
	{bus.TaskSubject(bus.TaskRegister, ""), (*Coordinator).apiTask, nil}, // tasks.go: the admin's
	{bus.TaskSubject(bus.TaskRegister, "*"), (*Coordinator).apiTask, nil},
	{bus.TaskSubject(bus.TaskDelete, ""), (*Coordinator).apiTask, nil},
	{bus.TaskSubject(bus.TaskDelete, "*"), (*Coordinator).apiTask, nil},
	{bus.AdvisoryMaxDeliveries, nil, func(c *Coordinator, ctx context.Context, m *nats.Msg) { c.handleAdvisory(ctx, m.Data) }}, // deadletters.go
	{bus.SubjectStartedAll, nil, (*Coordinator).handleStarted},                                                                 // started.go
}

// maxConcurrentRequests bounds the API requests and advisories one
// coordinator handles at once; requestTimeout bounds each.
const (
	maxConcurrentRequests = 32
	requestTimeout        = 30 * time.Second
)

// flushTimeout bounds the round trip that makes sure the server has the
// API's subscriptions.
const flushTimeout = 10 * time.Second

// ServeAPI answers the API subjects and takes the max-deliveries
// advisories (deadletters.go) and the workers' stage_started notices
// (started.go), in the queue group bus.QueueAPI so that each request is
// answered (each notice applied) by one coordinator, until ctx ends. It calls
// ready (if not nil) once the subscriptions are in place.
func (c *Coordinator) ServeAPI(ctx context.Context, ready func()) error {
	if c.cfg.Resources == nil || c.cfg.JS == nil {
		return ErrNoAPI
	}
	nc := c.cfg.JS.Conn()
	// nats.go runs a subscription's handler for one message at a time: a
	// request waits for a KV read or a publish, so each runs in its own
	// goroutine, at most maxConcurrentRequests at once.
	slots := make(chan struct{}, maxConcurrentRequests)
	// A handler nats.go is still running when ServeAPI returns must not
	// start a request then: running.Add during running.Wait panics, and a
	// request would outlive the connection. stopping, under mu, says so.
	var (
		running  sync.WaitGroup
		mu       sync.Mutex
		stopping bool
	)
	defer func() {
		mu.Lock()
		stopping = true
		mu.Unlock()
		running.Wait()
	}()
	var subs []*nats.Subscription
	defer func() {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
	}()
	for _, rt := range apiRoutes {
		handle := func(m *nats.Msg) {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			mu.Lock()
			if stopping || ctx.Err() != nil {
				mu.Unlock()
				<-slots
				return
			}
			running.Add(1)
			mu.Unlock()
			go func() {
				defer func() { <-slots; running.Done() }()
				rctx, cancel := context.WithTimeout(ctx, requestTimeout)
				defer cancel()
				if rt.notice != nil {
					rt.notice(c, rctx, m)
					return
				}
				c.answer(rctx, rt, m)
			}()
		}
		sub, err := nc.QueueSubscribe(rt.subject, bus.QueueAPI, handle)
		if err != nil {
			return fmt.Errorf("coordinator: subscribe %s: %w", rt.subject, err)
		}
		subs = append(subs, sub)
	}
	if err := nc.FlushTimeout(flushTimeout); err != nil {
		return fmt.Errorf("coordinator: subscribe the API: %w", err)
	}
	if ready != nil {
		ready()
	}
	<-ctx.Done()
	return nil
}

// answer runs one request and sends its reply.
func (c *Coordinator) answer(ctx context.Context, rt apiRoute, m *nats.Msg) {
	reply := rt.handle(c, ctx, m.Subject, m.Data)
	if m.Reply == "" {
		return // a publish, not a request: nobody to answer
	}
	b, err := json.Marshal(reply)
	if err == nil {
		err = m.Respond(b)
	}
	if err != nil {
		c.log.Warn("answer API request", "subject", rt.subject, "err", err)
	}
}

// apiSubmit is the submit subject: an messages.APIRequest.
func (c *Coordinator) apiSubmit(ctx context.Context, data []byte) messages.APIReply {
	req, err := messages.DecodeAPIRequest(data)
	if err != nil {
		return messages.ReplyOf("", err)
	}
	id, err := c.Accept(ctx, *req)
	return messages.ReplyOf(id, err)
}

// apiTaskRun is the task subject: a run of a named task's job.
func (c *Coordinator) apiTaskRun(ctx context.Context, data []byte) messages.APIReply {
	req, err := messages.DecodeTaskRunRequest(data)
	if err != nil {
		return messages.ReplyOf("", err)
	}
	id, err := c.AcceptTaskRun(ctx, *req)
	return messages.ReplyOf(id, err)
}

// AcceptTaskRun is Accept for a run of the named task's job.
func (c *Coordinator) AcceptTaskRun(ctx context.Context, req messages.TaskRunRequest) (string, error) {
	if c.cfg.Resources == nil {
		return "", ErrNoAPI
	}
	e, err := c.cfg.Resources.Tasks.Get(ctx, bus.TaskKey(req.Task))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", &messages.FieldError{Field: "task", Msg: fmt.Sprintf("no task named %q", req.Task)}
	}
	if err != nil {
		return "", fmt.Errorf("load task %s: %w", req.Task, err)
	}
	var t messages.Task
	if err := json.Unmarshal(e.Value(), &t); err != nil {
		return "", fmt.Errorf("task %s: corrupt: %w", req.Task, err)
	}
	run := messages.RunRequest{FromJob: t.JobID, Args: req.Args, Samples: req.Samples, Options: req.Options.Over(t.Defaults)}
	return c.Accept(ctx, messages.APIRequest{V: req.V, JobID: req.JobID, Run: &run, ReplyTo: req.ReplyTo})
}

// Accept checks req as the coordinator would when it takes the job, and
// queues it: it returns the job's ID, or the problem (a *messages.FieldError
// names the field). A request with the ID of a job that exists is not
// queued again; its ID is the answer.
func (c *Coordinator) Accept(ctx context.Context, req messages.APIRequest) (string, error) {
	if c.cfg.Resources == nil {
		return "", ErrNoAPI
	}
	if req.V > messages.WireVersion {
		return "", &messages.FieldError{Field: "v", Msg: fmt.Sprintf("message version %d is newer than this coordinator's %d", req.V, messages.WireVersion)}
	}
	if err := messages.CheckReplyTo(req.ReplyTo); err != nil {
		return "", err
	}
	jobID := req.JobID
	switch {
	case jobID == "":
		jobID = bus.NewJobID()
	case !bus.ValidJobID(jobID):
		return "", &messages.FieldError{Field: "job_id", Msg: "must be 1 to 128 characters from A-Z a-z 0-9 _ -"}
	default:
		if exists, err := c.jobExists(ctx, jobID); err != nil || exists {
			return jobID, err
		}
	}
	sub := messages.SubmitJob{V: messages.WireVersion, JobID: jobID, Run: req.Run}
	switch {
	case req.Run != nil:
		if _, err := c.PrepareRun(ctx, jobID, *req.Run); err != nil {
			return "", err
		}
	case req.Spec != nil:
		if err := c.checkSpec(ctx, req.Spec); err != nil {
			return "", err
		}
		sub.Spec = *req.Spec
	default:
		return "", &messages.FieldError{Field: "spec", Msg: "missing: a request needs a spec (a job) or a run"}
	}
	if req.ReplyTo != "" {
		if _, err := c.cfg.Resources.ReplyTo.Put(ctx, bus.ReplyToKey(jobID), []byte(req.ReplyTo)); err != nil {
			return "", fmt.Errorf("keep reply_to of job %s: %w", jobID, err)
		}
	}
	if err := c.cfg.Publisher.PublishJSON(ctx, bus.SubjectJobsSubmit, sub, bus.SubmitMsgID(jobID)); err != nil {
		return "", fmt.Errorf("queue job %s: %w", jobID, err)
	}
	return jobID, nil
}

// jobExists reports whether jobID has a state or a result.
func (c *Coordinator) jobExists(ctx context.Context, jobID string) (bool, error) {
	for _, kv := range []jetstream.KeyValue{c.cfg.States, c.cfg.Results} {
		_, err := kv.Get(ctx, bus.JobKey(jobID))
		switch {
		case err == nil:
			return true, nil
		case !errors.Is(err, jetstream.ErrKeyNotFound):
			return false, fmt.Errorf("look up job %s: %w", jobID, err)
		}
	}
	return false, nil
}

// checkSpec checks what DecodeAPIRequest could not: that every sample is
// an object already in the samples store.
func (c *Coordinator) checkSpec(ctx context.Context, spec *messages.JobSpec) error {
	if err := spec.Validate(); err != nil {
		return messages.PrefixField("spec", err)
	}
	if err := c.checkOffered(spec); err != nil {
		return messages.PrefixField("spec", err)
	}
	// The bound before the lookups: 10,000 sample references are refused
	// at once, not after 10,000 round trips.
	if err := CheckSubmission(SubmissionOf("", *spec, c.cfg.DefaultModel), c.cfg.MaxStateBytes); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(spec.Samples)) {
		ref, ok := messages.ParseObjectRef(spec.Samples[name])
		if !ok {
			return &messages.FieldError{Field: "spec.samples." + name, Msg: "must be an object reference (sha256:<hex>[.ext]) into " + bus.ObjectStoreSamples}
		}
		_, err := c.cfg.Resources.Samples.GetInfo(ctx, ref.ObjectName())
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			return &messages.FieldError{Field: "spec.samples." + name, Msg: "no object " + ref.ObjectName() + " in " + bus.ObjectStoreSamples + ": upload it first"}
		}
		if err != nil {
			return fmt.Errorf("look up sample %s: %w", name, err)
		}
	}
	return nil
}

// replyResult publishes a finished job's result on the reply_to subject
// its request named. The key is deleted after, except for an errored job,
// whose dead letter a replay may still re-open (deadletters.go). A result that cannot
// be published (larger than the server's payload limit, say) is logged;
// the result stays in the results bucket either way.
func (c *Coordinator) replyResult(ctx context.Context, res *messages.Result, b []byte) {
	if c.cfg.Resources == nil || c.cfg.JS == nil || res == nil {
		return
	}
	key := bus.ReplyToKey(res.JobID)
	e, err := c.cfg.Resources.ReplyTo.Get(ctx, key)
	if err != nil {
		if !errors.Is(err, jetstream.ErrKeyNotFound) {
			c.log.Warn("look up reply_to", "job_id", res.JobID, "err", err)
		}
		return
	}
	subject := string(e.Value())
	if messages.CheckReplyTo(subject) != nil {
		return
	}
	if err := c.cfg.JS.Conn().Publish(subject, b); err != nil {
		c.log.Warn("publish result on reply_to", "job_id", res.JobID, "subject", subject, "err", err)
		return
	}
	if res.Status == messages.StatusErrored {
		return // a replay of its dead letter may finish it again (deadletters.go)
	}
	if err := c.cfg.Resources.ReplyTo.Delete(ctx, key); err != nil {
		c.log.Warn("forget reply_to", "job_id", res.JobID, "err", err)
	}
}
