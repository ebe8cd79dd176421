package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Provisioning defaults; see ProvisionConfig.
const (
	DefaultAckWait         = 60 * time.Second
	DefaultMaxDeliver      = 5
	DefaultDuplicateWindow = 10 * time.Minute
	DefaultEventsMaxAge    = 24 * time.Hour
	DefaultEventsPerJob    = 10_000
)

// ProvisionConfig sizes what Provision creates. The zero value of every field
// means its default.
type ProvisionConfig struct {
	// Replicas of every stream, consumer, bucket and object store. Default 1;
	// use 3 on a cluster of three or more servers.
	Replicas int
	// AckWait is how long a worker may hold a message without acking it or
	// calling InProgress before JetStream gives it to another worker. Workers
	// heartbeat at a third of it (see WorkerConfig.HeartbeatInterval), so it
	// bounds how long a crashed worker delays its messages, not how long a
	// stage may run. Default 60s.
	AckWait time.Duration
	// MaxDeliver is how many times one message is delivered before it is
	// given up: on the last delivery a Worker terminates a message whose
	// handler still fails (see Message.LastDelivery). -1 means no limit.
	// Default 5. The delay between deliveries is the Worker's (RetryDelay),
	// not the consumer's: a consumer BackOff would also stretch every
	// NakWithDelay, because the server measures a Nak delay against the
	// backoff step instead of AckWait.
	MaxDeliver int
	// DuplicateWindow is how long the jobs, stage and results streams remember
	// Nats-Msg-Ids (SubmitMsgID, StageMsgID, ResultMsgID). A coordinator that
	// replays a command after a crash, or a worker that publishes a result
	// again after a redelivery, within the window is dropped by the server.
	// Later duplicates get through: they are cheap (stage results are cached
	// by content) and the coordinator matches results by seq and drops stale
	// ones. The server keeps every ID of the window in memory. Default 10m.
	DuplicateWindow time.Duration
	// EventsMaxAge is how long progress events are kept. Default 24h.
	EventsMaxAge time.Duration
	// EventsPerJob caps the events kept per job (the oldest go first).
	// Default 10000.
	EventsPerJob int64
	// MemoryStorage keeps everything in memory instead of files (tests,
	// throwaway runs). Default false: file storage.
	MemoryStorage bool
}

func (c *ProvisionConfig) setDefaults() error {
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.AckWait == 0 {
		c.AckWait = DefaultAckWait
	}
	if c.MaxDeliver == 0 {
		c.MaxDeliver = DefaultMaxDeliver
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = DefaultDuplicateWindow
	}
	if c.EventsMaxAge == 0 {
		c.EventsMaxAge = DefaultEventsMaxAge
	}
	if c.EventsPerJob == 0 {
		c.EventsPerJob = DefaultEventsPerJob
	}
	switch {
	case c.Replicas < 1 || c.Replicas > 5:
		return fmt.Errorf("bus: provision: Replicas must be between 1 and 5, not %d", c.Replicas)
	case c.AckWait < 0:
		return fmt.Errorf("bus: provision: AckWait must be positive, not %s", c.AckWait)
	case c.MaxDeliver < -1:
		return fmt.Errorf("bus: provision: MaxDeliver must be -1 (no limit) or positive, not %d", c.MaxDeliver)
	case c.DuplicateWindow < 0 || c.EventsMaxAge < 0 || c.EventsPerJob < 0:
		return errors.New("bus: provision: DuplicateWindow, EventsMaxAge and EventsPerJob must not be negative")
	}
	return nil
}

// Resources are handles to everything Provision (or Open) found or made.
type Resources struct {
	Jobs    jetstream.Stream            // StreamJobs
	Results jetstream.Stream            // StreamResults
	Events  jetstream.Stream            // StreamEvents
	Stages  map[string]jetstream.Stream // by pool: StageStream(pool)

	JobsConsumer    jetstream.Consumer            // ConsumerCoordinator on StreamJobs
	ResultsConsumer jetstream.Consumer            // ConsumerCoordinator on StreamResults
	StageConsumers  map[string]jetstream.Consumer // by pool: StageConsumer(pool)

	JobState   jetstream.KeyValue    // BucketJobState
	JobResults jetstream.KeyValue    // BucketJobResults
	Tasks      jetstream.KeyValue    // BucketTasks
	Samples    jetstream.ObjectStore // ObjectStoreSamples
	Outputs    jetstream.ObjectStore // ObjectStoreOutputs
}

// Provision creates whatever is missing and updates whatever differs from
// cfg: the streams, the durable pull consumers, the KV buckets and the object
// stores. It is idempotent, so every coordinator may call it at start. A
// change the server cannot make in place (such as the storage type of an
// existing stream) is an error.
func Provision(ctx context.Context, js jetstream.JetStream, cfg ProvisionConfig) (*Resources, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	storage := jetstream.FileStorage
	if cfg.MemoryStorage {
		storage = jetstream.MemoryStorage
	}
	workQueue := func(name, subject, desc string) jetstream.StreamConfig {
		return jetstream.StreamConfig{
			Name:        name,
			Description: desc,
			Subjects:    []string{subject},
			Retention:   jetstream.WorkQueuePolicy,
			Storage:     storage,
			Replicas:    cfg.Replicas,
			Duplicates:  cfg.DuplicateWindow,
		}
	}
	consumer := func(name, subject, desc string) jetstream.ConsumerConfig {
		return jetstream.ConsumerConfig{
			Durable:       name,
			Description:   desc,
			FilterSubject: subject,
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       cfg.AckWait,
			MaxDeliver:    cfg.MaxDeliver,
			DeliverPolicy: jetstream.DeliverAllPolicy,
			Replicas:      cfg.Replicas,
		}
	}

	res := &Resources{
		Stages:         map[string]jetstream.Stream{},
		StageConsumers: map[string]jetstream.Consumer{},
	}
	var err error
	if res.Jobs, err = createStream(ctx, js, workQueue(StreamJobs, SubjectJobsAll, "autocoder job submissions")); err != nil {
		return nil, err
	}
	if res.JobsConsumer, err = createConsumer(ctx, js, StreamJobs, consumer(ConsumerCoordinator, SubjectJobsAll, "coordinators take job submissions")); err != nil {
		return nil, err
	}
	for _, pool := range Pools() {
		if res.Stages[pool], err = createStream(ctx, js, workQueue(StageStream(pool), StageSubjects(pool), "autocoder "+pool+" stage commands")); err != nil {
			return nil, err
		}
		if res.StageConsumers[pool], err = createConsumer(ctx, js, StageStream(pool), consumer(StageConsumer(pool), StageSubjects(pool), pool+" workers take stage commands")); err != nil {
			return nil, err
		}
	}
	if res.Results, err = createStream(ctx, js, workQueue(StreamResults, SubjectResultsAll, "autocoder stage results")); err != nil {
		return nil, err
	}
	if res.ResultsConsumer, err = createConsumer(ctx, js, StreamResults, consumer(ConsumerCoordinator, SubjectResultsAll, "coordinators take stage results")); err != nil {
		return nil, err
	}
	// Events are read by many (live views, `submit events`, the web UI) with
	// ephemeral ordered consumers, so they are kept by age, not consumed.
	if res.Events, err = createStream(ctx, js, jetstream.StreamConfig{
		Name:              StreamEvents,
		Description:       "autocoder job progress events",
		Subjects:          []string{SubjectEventsAll},
		Retention:         jetstream.LimitsPolicy,
		MaxAge:            cfg.EventsMaxAge,
		MaxMsgsPerSubject: cfg.EventsPerJob,
		Discard:           jetstream.DiscardOld,
		Storage:           storage,
		Replicas:          cfg.Replicas,
		Duplicates:        min(cfg.DuplicateWindow, cfg.EventsMaxAge),
	}); err != nil {
		return nil, err
	}

	kv := func(bucket, desc string) (jetstream.KeyValue, error) {
		b, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      bucket,
			Description: desc,
			History:     1, // state is updated by CAS on the revision; older values are never read
			Storage:     storage,
			Replicas:    cfg.Replicas,
		})
		if err != nil {
			return nil, fmt.Errorf("bus: provision key-value bucket %s: %w", bucket, err)
		}
		return b, nil
	}
	if res.JobState, err = kv(BucketJobState, "autocoder job state machines"); err != nil {
		return nil, err
	}
	if res.JobResults, err = kv(BucketJobResults, "autocoder job result objects"); err != nil {
		return nil, err
	}
	if res.Tasks, err = kv(BucketTasks, "autocoder named reusable tasks"); err != nil {
		return nil, err
	}

	obj := func(bucket, desc string) (jetstream.ObjectStore, error) {
		o, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket:      bucket,
			Description: desc,
			Storage:     storage,
			Replicas:    cfg.Replicas,
		})
		if err != nil {
			return nil, fmt.Errorf("bus: provision object store %s: %w", bucket, err)
		}
		return o, nil
	}
	if res.Samples, err = obj(ObjectStoreSamples, "autocoder sample files by content hash"); err != nil {
		return nil, err
	}
	if res.Outputs, err = obj(ObjectStoreOutputs, "autocoder File and Dir outputs"); err != nil {
		return nil, err
	}
	return res, nil
}

func createStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	s, err := js.CreateOrUpdateStream(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("bus: provision stream %s: %w", cfg.Name, err)
	}
	return s, nil
}

func createConsumer(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	c, err := js.CreateOrUpdateConsumer(ctx, stream, cfg)
	if err != nil {
		return nil, fmt.Errorf("bus: provision consumer %s on %s: %w", cfg.Durable, stream, err)
	}
	return c, nil
}

// ErrNotProvisioned is returned (wrapped) by Open when a stream, consumer,
// bucket or object store does not exist yet.
var ErrNotProvisioned = errors.New("bus: not provisioned")

// Open looks up everything Provision makes, without creating or changing
// anything: for processes (workers, the CLI) that join a deployment whose
// coordinator owns the configuration.
func Open(ctx context.Context, js jetstream.JetStream) (*Resources, error) {
	notFound := func(kind, name string, err error) error {
		if errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrConsumerNotFound) ||
			errors.Is(err, jetstream.ErrBucketNotFound) {
			return fmt.Errorf("%w: %s %s", ErrNotProvisioned, kind, name)
		}
		return fmt.Errorf("bus: open %s %s: %w", kind, name, err)
	}
	res := &Resources{
		Stages:         map[string]jetstream.Stream{},
		StageConsumers: map[string]jetstream.Consumer{},
	}
	var err error
	streams := []struct {
		name string
		dst  *jetstream.Stream
	}{{StreamJobs, &res.Jobs}, {StreamResults, &res.Results}, {StreamEvents, &res.Events}}
	for _, s := range streams {
		if *s.dst, err = js.Stream(ctx, s.name); err != nil {
			return nil, notFound("stream", s.name, err)
		}
	}
	if res.JobsConsumer, err = js.Consumer(ctx, StreamJobs, ConsumerCoordinator); err != nil {
		return nil, notFound("consumer", StreamJobs+"/"+ConsumerCoordinator, err)
	}
	if res.ResultsConsumer, err = js.Consumer(ctx, StreamResults, ConsumerCoordinator); err != nil {
		return nil, notFound("consumer", StreamResults+"/"+ConsumerCoordinator, err)
	}
	for _, pool := range Pools() {
		if res.Stages[pool], err = js.Stream(ctx, StageStream(pool)); err != nil {
			return nil, notFound("stream", StageStream(pool), err)
		}
		if res.StageConsumers[pool], err = js.Consumer(ctx, StageStream(pool), StageConsumer(pool)); err != nil {
			return nil, notFound("consumer", StageStream(pool)+"/"+StageConsumer(pool), err)
		}
	}
	if res.JobState, err = js.KeyValue(ctx, BucketJobState); err != nil {
		return nil, notFound("key-value bucket", BucketJobState, err)
	}
	if res.JobResults, err = js.KeyValue(ctx, BucketJobResults); err != nil {
		return nil, notFound("key-value bucket", BucketJobResults, err)
	}
	if res.Tasks, err = js.KeyValue(ctx, BucketTasks); err != nil {
		return nil, notFound("key-value bucket", BucketTasks, err)
	}
	if res.Samples, err = js.ObjectStore(ctx, ObjectStoreSamples); err != nil {
		return nil, notFound("object store", ObjectStoreSamples, err)
	}
	if res.Outputs, err = js.ObjectStore(ctx, ObjectStoreOutputs); err != nil {
		return nil, notFound("object store", ObjectStoreOutputs, err)
	}
	return res, nil
}
