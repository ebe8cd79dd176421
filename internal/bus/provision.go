package bus

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/pkg/client"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Provisioning defaults; see ProvisionConfig.
const (
	DefaultAckWait         = 15 * time.Second
	DefaultMaxDeliver      = 5
	DefaultDuplicateWindow = 10 * time.Minute
	DefaultEventsMaxAge    = 24 * time.Hour
	DefaultEventsPerJob    = 10_000
	DefaultDLQMaxAge       = 7 * 24 * time.Hour
	DefaultClaimsMaxAge    = 7 * 24 * time.Hour
	DefaultWorkerBeatTTL   = 30 * time.Second
)

// ProvisionConfig sizes what Provision creates. The zero value of every field
// means its default.
type ProvisionConfig struct {
	// Replicas of every stream, bucket and object store (a consumer has
	// its stream's). Default 1, for one NATS server; 3 on a cluster of
	// three or more, so that a job survives the loss of a server. A store
	// that has more replicas than asked (raised by hand, or by an earlier
	// setting) keeps them: Provision raises, never lowers (replicas.go).
	Replicas int
	// StoreReplicas overrides Replicas for some streams, buckets and
	// object stores, by name (StreamEvents, BucketJobState,
	// ObjectStoreClaims, ...; see StoreNames). Default none.
	StoreReplicas map[string]int
	// SamplesMaxBytes, OutputsMaxBytes and ClaimsMaxBytes bound the object
	// stores ObjectStoreSamples (samples and documentation bundles),
	// ObjectStoreOutputs (File and Dir outputs, agent workspaces) and
	// ObjectStoreClaims (claim-checked message bodies). An upload to a full
	// store is refused (ErrStoreFull) while the streams that hold the jobs
	// keep their room: the server reserves each bound when the store is
	// made, and refuses a bound it cannot hold. A bound that is set is
	// used as it is. One that is not is fitted to the server (storefit.go):
	// the smaller of DefaultSamplesMaxBytes, DefaultOutputsMaxBytes,
	// DefaultClaimsMaxBytes (a sixteenth of those with MemoryStorage) and
	// its share of half of StorageLimit; never below the bound the store
	// already has.
	SamplesMaxBytes, OutputsMaxBytes, ClaimsMaxBytes int64
	// StorageLimit is the JetStream storage the server has, in bytes (its
	// memory with MemoryStorage), to fit the bounds that are not set: for
	// an embedded server, Embedded.StorageLimit. Default 0: the account's
	// limit as the server reports it (js.AccountInfo), if it has one; if
	// not, the defaults are used as they are.
	StorageLimit int64
	// AckWait is how long a worker may hold a message without acking it or
	// calling InProgress before JetStream gives it to another worker. Workers
	// heartbeat at a third of it (see WorkerConfig.HeartbeatInterval), so it
	// bounds how long a crashed worker delays its messages, not how long a
	// stage may run. Default 15s: a stage held by a worker that was killed
	// is taken by another within about that (stagework's in-flight claim
	// has the same lease, stagework.DefaultClaimLease).
	AckWait time.Duration
	// MaxDeliver is how many times one message is delivered before it is
	// given up: the server then sends a max-deliveries advisory, which a
	// coordinator turns into a dead letter (a Worker hands a message whose
	// handler fails on its last delivery back for that, see
	// Message.LastDelivery). -1 means no limit.
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
	// DLQMaxAge is how long dead letters are kept (StreamDLQ). Default 7 days.
	DLQMaxAge time.Duration
	// ClaimsMaxAge is how long a claim-checked message body is kept in
	// ObjectStoreClaims (claimcheck.go): longer than a message may wait
	// on its stream. Default 7 days.
	ClaimsMaxAge time.Duration
	// WorkerBeatTTL is how long a worker's capacity beat stays in
	// BucketWorkers; workers beat every third of it (roster.go), so a
	// worker that stops beating leaves the queues view and the capacity
	// gauge within it. Default 30s.
	WorkerBeatTTL time.Duration
	// MemoryStorage keeps everything in memory instead of files (tests,
	// throwaway runs). Default false: file storage.
	MemoryStorage bool
	// Logger hears what Provision kept that differs from the
	// configuration (more replicas than asked). Default nil: discard.
	Logger *slog.Logger
}

// Default bounds of the object stores (ProvisionConfig.SamplesMaxBytes...).
const (
	DefaultSamplesMaxBytes = 4 << 30 // the largest sample is 2 GiB (objects.MaxObjectBytes)
	DefaultOutputsMaxBytes = 4 << 30
	DefaultClaimsMaxBytes  = 1 << 30
)

func (c *ProvisionConfig) setDefaults() error {
	c.Replicas = cmp.Or(c.Replicas, 1)
	c.AckWait = cmp.Or(c.AckWait, DefaultAckWait)
	c.MaxDeliver = cmp.Or(c.MaxDeliver, DefaultMaxDeliver)
	c.DuplicateWindow = cmp.Or(c.DuplicateWindow, DefaultDuplicateWindow)
	c.EventsMaxAge = cmp.Or(c.EventsMaxAge, DefaultEventsMaxAge)
	c.EventsPerJob = cmp.Or(c.EventsPerJob, DefaultEventsPerJob)
	c.DLQMaxAge = cmp.Or(c.DLQMaxAge, DefaultDLQMaxAge)
	c.ClaimsMaxAge = cmp.Or(c.ClaimsMaxAge, DefaultClaimsMaxAge)
	c.WorkerBeatTTL = cmp.Or(c.WorkerBeatTTL, DefaultWorkerBeatTTL)
	if c.Logger == nil {
		c.Logger = discardLogger()
	}
	if err := c.storeDefaults(); err != nil {
		return err
	}
	switch {
	case c.Replicas < 1 || c.Replicas > 5:
		return fmt.Errorf("bus: provision: Replicas must be between 1 and 5, not %d", c.Replicas)
	case c.AckWait < 0:
		return fmt.Errorf("bus: provision: AckWait must be positive, not %s", c.AckWait)
	case c.MaxDeliver < -1:
		return fmt.Errorf("bus: provision: MaxDeliver must be -1 (no limit) or positive, not %d", c.MaxDeliver)
	case c.DuplicateWindow < 0 || c.EventsMaxAge < 0 || c.EventsPerJob < 0 || c.DLQMaxAge < 0 || c.ClaimsMaxAge < 0:
		return errors.New("bus: provision: DuplicateWindow, EventsMaxAge, EventsPerJob, DLQMaxAge and ClaimsMaxAge must not be negative")
	case c.WorkerBeatTTL < time.Second:
		return fmt.Errorf("bus: provision: WorkerBeatTTL must be a second or more, not %s", c.WorkerBeatTTL)
	}
	return nil
}

// Resources are handles to everything Provision (or Open) found or made.
type Resources struct {
	Jobs    jetstream.Stream                   // StreamJobs
	Events  jetstream.Stream                   // StreamEvents
	DLQ     jetstream.Stream                   // StreamDLQ: dead letters
	Stages  map[messages.Pool]jetstream.Stream // by pool: StageStream(pool)
	Results map[messages.Pool]jetstream.Stream // by pool: ResultStream(pool)

	JobsConsumer    jetstream.Consumer                   // ConsumerCoordinator on StreamJobs
	StageConsumers  map[messages.Pool]jetstream.Consumer // by pool: StageConsumer(pool)
	ResultConsumers map[messages.Pool]jetstream.Consumer // by pool: ConsumerCoordinator on ResultStream(pool)

	JobState   jetstream.KeyValue    // BucketJobState
	JobResults jetstream.KeyValue    // BucketJobResults
	JobIndex   jetstream.KeyValue    // BucketJobIndex
	Tasks      jetstream.KeyValue    // BucketTasks
	ReplyTo    jetstream.KeyValue    // BucketReplyTo
	Workers    jetstream.KeyValue    // BucketWorkers: capacity beats (roster.go)
	Pools      jetstream.KeyValue    // BucketPools: pause switches (pause.go)
	Samples    jetstream.ObjectStore // ObjectStoreSamples
	Outputs    jetstream.ObjectStore // ObjectStoreOutputs
	Claims     jetstream.ObjectStore // ObjectStoreClaims
}

func newResources() *Resources {
	return &Resources{
		Stages: map[messages.Pool]jetstream.Stream{}, StageConsumers: map[messages.Pool]jetstream.Consumer{},
		Results: map[messages.Pool]jetstream.Stream{}, ResultConsumers: map[messages.Pool]jetstream.Consumer{},
	}
}

// What Provision makes and Open finds is listed once, in the tables below,
// each entry with where its handle goes in Resources.

// workQueue is a work-queue stream and the durable pull consumer that takes
// from it.
type workQueue struct {
	stream, consumer, subjects string
	streamDesc, consumerDesc   string
	setStream                  func(jetstream.Stream)
	setConsumer                func(jetstream.Consumer)
}

// workQueues lists the work queues: job submissions, each pool's stage
// commands, each pool's stage results.
func (r *Resources) workQueues() []workQueue {
	qs := []workQueue{{
		stream: StreamJobs, consumer: ConsumerCoordinator, subjects: SubjectJobsAll,
		streamDesc: "autocoder job submissions", consumerDesc: "coordinators take job submissions",
		setStream: func(s jetstream.Stream) { r.Jobs = s }, setConsumer: func(c jetstream.Consumer) { r.JobsConsumer = c },
	}}
	for _, pool := range messages.Pools() {
		qs = append(qs, workQueue{
			stream: StageStream(pool), consumer: StageConsumer(pool), subjects: StageSubjects(pool),
			streamDesc: "autocoder " + string(pool) + " stage commands", consumerDesc: string(pool) + " workers take stage commands",
			setStream: func(s jetstream.Stream) { r.Stages[pool] = s }, setConsumer: func(c jetstream.Consumer) { r.StageConsumers[pool] = c },
		})
	}
	for _, pool := range messages.Pools() {
		qs = append(qs, workQueue{
			stream: ResultStream(pool), consumer: ConsumerCoordinator, subjects: PoolResultSubjects(pool),
			streamDesc: "autocoder " + string(pool) + " stage results", consumerDesc: "coordinators take " + string(pool) + " stage results",
			setStream: func(s jetstream.Stream) { r.Results[pool] = s }, setConsumer: func(c jetstream.Consumer) { r.ResultConsumers[pool] = c },
		})
	}
	return qs
}

// store is a KV bucket or an object store.
type store[T any] struct {
	name, desc string
	dst        *T
}

func (r *Resources) buckets() []store[jetstream.KeyValue] {
	return []store[jetstream.KeyValue]{
		{BucketJobState, "autocoder job state machines", &r.JobState},
		{BucketJobResults, "autocoder job result objects", &r.JobResults},
		{BucketJobIndex, "autocoder job summaries for job lists", &r.JobIndex},
		{BucketTasks, "autocoder named reusable tasks", &r.Tasks},
		{BucketReplyTo, "autocoder reply_to subjects of running jobs", &r.ReplyTo},
		{BucketWorkers, "autocoder stage workers' capacity beats", &r.Workers},
		{BucketPools, "autocoder worker pools' pause switches", &r.Pools},
	}
}

func (r *Resources) objectStores() []store[jetstream.ObjectStore] {
	return []store[jetstream.ObjectStore]{
		{ObjectStoreSamples, "autocoder sample files by content hash", &r.Samples},
		{ObjectStoreOutputs, "autocoder File and Dir outputs", &r.Outputs},
		{ObjectStoreClaims, "autocoder message bodies too large for a message (claim check)", &r.Claims},
	}
}

// Provision creates whatever is missing and updates whatever differs from
// cfg: the streams, the durable pull consumers, the KV buckets and the object
// stores. It is idempotent, so every coordinator may call it at start. A
// change the server cannot make in place (such as the storage type of an
// existing stream) is an error. The one results stream of older versions
// is deleted when empty and an error (ErrLegacyResults) when not; see
// retireLegacyResults.
func Provision(ctx context.Context, js jetstream.JetStream, cfg ProvisionConfig) (*Resources, error) {
	return provision(ctx, js, cfg, &placeWaits{})
}

// provision is Provision, with the stores' placement waits begun by
// earlier attempts (ProvisionWhenReady).
func provision(ctx context.Context, js jetstream.JetStream, cfg ProvisionConfig, waits *placeWaits) (*Resources, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	p := provisioner{js: js, cfg: cfg, waits: waits}
	if err := p.retireLegacyResults(ctx); err != nil {
		return nil, err
	}
	res := newResources()
	for _, q := range res.workQueues() {
		if err := p.workQueue(ctx, q); err != nil {
			return nil, err
		}
	}
	var err error
	if res.Events, err = p.events(ctx); err != nil {
		return nil, err
	}
	if res.DLQ, err = p.deadLetters(ctx); err != nil {
		return nil, err
	}
	for _, b := range res.buckets() {
		if *b.dst, err = p.keyValue(ctx, b.name, b.desc); err != nil {
			return nil, err
		}
	}
	// The bounds are fitted once the streams exist: a storage probe that is
	// an account's only stream takes the account's stream directory with it
	// when it is deleted, and a stream made meanwhile fails (nats-server).
	defer func() { p.releaseProbing(ctx) }() // once the stores are made, or provisioning failed
	if err := p.fitBounds(ctx); err != nil { // storefit.go
		return nil, err
	}
	for _, o := range res.objectStores() {
		if *o.dst, err = p.objectStore(ctx, o.name, o.desc); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// provisioner makes each kind of resource from one ProvisionConfig.
type provisioner struct {
	js  jetstream.JetStream
	cfg ProvisionConfig
	// fitted are the object stores whose bound was not set, but fitted to
	// the server (storefit.go).
	fitted map[string]bool
	// waits says since when each fitted store has been refused.
	waits *placeWaits
	// probeID names this coordinator's storage probe, if it probes
	// (storefit.go).
	probeID string
}

// placeWaits holds when each fitted store was first refused, across the
// attempts of ProvisionWhenReady (each bounded to attemptTimeout, under
// clusterReportWait), so that clusterReportWait bounds the whole wait
// and a real shortage ends with its explanation instead of being waited
// on for ever.
type placeWaits struct {
	mu    sync.Mutex
	first map[string]time.Time
}

// refusedFor is how long bucket has been refused, counting this refusal.
func (w *placeWaits) refusedFor(bucket string) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.first == nil {
		w.first = map[string]time.Time{}
	}
	first, ok := w.first[bucket]
	if !ok {
		first = time.Now()
		w.first[bucket] = first
	}
	return time.Since(first)
}

func (p provisioner) storage() jetstream.StorageType {
	if p.cfg.MemoryStorage {
		return jetstream.MemoryStorage
	}
	return jetstream.FileStorage
}

func (p provisioner) workQueue(ctx context.Context, q workQueue) error {
	s, err := p.createStream(ctx, jetstream.StreamConfig{
		Name:        q.stream,
		Description: q.streamDesc,
		Subjects:    []string{q.subjects},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     p.storage(),
		Duplicates:  p.cfg.DuplicateWindow,
	})
	if err != nil {
		return err
	}
	q.setStream(s)
	c, err := p.js.CreateOrUpdateConsumer(ctx, q.stream, jetstream.ConsumerConfig{
		Durable:       q.consumer,
		Description:   q.consumerDesc,
		FilterSubject: q.subjects,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       p.cfg.AckWait,
		MaxDeliver:    p.cfg.MaxDeliver,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		Replicas:      0, // its stream's, and they follow the stream's when it is raised
	})
	if err != nil {
		return fmt.Errorf("bus: provision consumer %s on %s: %w", q.consumer, q.stream, err)
	}
	q.setConsumer(c)
	return nil
}

// ErrLegacyResults is returned (wrapped) by Provision when the results
// stream of an older autocoder still holds stage results.
var ErrLegacyResults = errors.New("bus: the old results stream " + legacyStreamResults + " still holds stage results")

// retireLegacyResults deletes the one results stream older versions made,
// whose subjects (SubjectResultsAll) overlap every pool's ResultStream, so
// that those can be made: JetStream refuses streams with overlapping
// subjects. Only an empty one is deleted; results still in it belong to
// running jobs, and deleting them would stall those jobs until their stage
// deadlines, so Provision stops and says what to do instead. (A result an
// older worker publishes between the check and the delete is lost the same
// way; stop older workers before upgrading.)
func (p provisioner) retireLegacyResults(ctx context.Context) error {
	s, err := p.js.Stream(ctx, legacyStreamResults)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("bus: provision: look up the old results stream %s: %w", legacyStreamResults, err)
	}
	if n := s.CachedInfo().State.Msgs; n > 0 {
		return fmt.Errorf("%w (%d of them): let a coordinator of the older version take them until the stream is empty, "+
			"or delete it (nats stream rm %s; the jobs waiting for those results fail at their stage deadline), then start again",
			ErrLegacyResults, n, legacyStreamResults)
	}
	if err := p.js.DeleteStream(ctx, legacyStreamResults); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("bus: provision: delete the empty old results stream %s: %w", legacyStreamResults, err)
	}
	return nil
}

// events makes the events stream. Events are read by many (live views,
// `submit events`, the web UI) with ephemeral ordered consumers, so they are
// kept by age, not consumed. On one node they are flushed to disk
// asynchronously (sync.go, "Progress events").
func (p provisioner) events(ctx context.Context) (jetstream.Stream, error) {
	return p.createStream(ctx, jetstream.StreamConfig{
		PersistMode:       jetstream.AsyncPersistMode, // where the stream can have it (createStream)
		Name:              StreamEvents,
		Description:       "autocoder job progress events",
		Subjects:          []string{SubjectEventsAll},
		Retention:         jetstream.LimitsPolicy,
		MaxAge:            p.cfg.EventsMaxAge,
		MaxMsgsPerSubject: p.cfg.EventsPerJob,
		Discard:           jetstream.DiscardOld,
		Storage:           p.storage(),
		Duplicates:        min(p.cfg.DuplicateWindow, p.cfg.EventsMaxAge),
	})
}

// deadLetters makes the dead-letter stream: copies of messages that
// exhausted their deliveries, kept by age for inspection and replay.
func (p provisioner) deadLetters(ctx context.Context) (jetstream.Stream, error) {
	return p.createStream(ctx, jetstream.StreamConfig{
		Name:        StreamDLQ,
		Description: "autocoder dead letters: messages that exhausted their deliveries",
		Subjects:    []string{SubjectDLQ},
		Retention:   jetstream.LimitsPolicy,
		MaxAge:      p.cfg.DLQMaxAge,
		Discard:     jetstream.DiscardOld,
		Storage:     p.storage(),
		Duplicates:  min(p.cfg.DuplicateWindow, p.cfg.DLQMaxAge),
	})
}

func (p provisioner) createStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	cur, err := p.current(ctx, cfg.Name)
	if err != nil {
		return nil, err
	}
	replicas := p.replicas(cfg.Name, cur)
	cfg.Replicas = replicas
	if err := persistMode(&cfg, cur, p.js.Conn().ConnectedClusterName() != ""); err != nil {
		return nil, err
	}
	s, err := p.js.CreateOrUpdateStream(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("bus: provision stream %s: %w", cfg.Name, p.explain(err, replicas))
	}
	return s, nil
}

func (p provisioner) keyValue(ctx context.Context, bucket, desc string) (jetstream.KeyValue, error) {
	cur, err := p.current(ctx, kvStream(bucket))
	if err != nil {
		return nil, err
	}
	replicas := p.replicas(bucket, cur)
	cfg := jetstream.KeyValueConfig{
		Bucket:      bucket,
		Description: desc,
		History:     1, // state is updated by CAS on the revision; older values are never read
		Storage:     p.storage(),
		Replicas:    replicas,
	}
	if bucket == BucketWorkers {
		cfg.TTL = p.cfg.WorkerBeatTTL // a worker that stops beating drops out
	}
	b, err := p.js.CreateOrUpdateKeyValue(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("bus: provision key-value bucket %s: %w", bucket, p.explain(err, replicas))
	}
	return b, nil
}

// placePause is how long objectStore waits between placements a cluster
// refuses (up to clusterReportWait).
const placePause = 500 * time.Millisecond

func (p provisioner) objectStore(ctx context.Context, bucket, desc string) (jetstream.ObjectStore, error) {
	for nameInUse := 0; ; {
		o, err := p.objectStoreOnce(ctx, bucket, desc)
		switch {
		case errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) && nameInUse < 2:
			// Two coordinators starting at once may fit different bounds
			// (each probe sees the other's reservation, storefit.go): the
			// one that creates the store second is refused, and looks
			// again, finding the store made.
			nameInUse++
		case p.fitted[bucket] && p.mayPlaceLater(ctx, err) && p.waits.refusedFor(bucket) < clusterReportWait:
			if d, ok := ctx.Deadline(); ok && time.Until(d) < 2*placePause {
				// The attempt ends first (whenready.go bounds each):
				// the next one waits on, rather than this refusal
				// ending as a bare deadline.
				return nil, fmt.Errorf("%w: %w", errPlacementPending, err)
			}
			p.cfg.Logger.Info("object store not made yet: waiting for the reservation it was fitted to", "store", bucket, "err", err)
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(placePause):
			}
		default:
			return o, err
		}
	}
}

// mayPlaceLater reports whether the server's refusal (err) of a store
// with a fitted bound may pass: a cluster places by the usage its servers
// last reported, which may still count the storage probe just deleted;
// a standalone server refuses while another coordinator's probe, starting
// at the same time, holds its reservation (storefit.go).
func (p provisioner) mayPlaceLater(ctx context.Context, err error) bool {
	switch boundRefusal(err) {
	case refusedAtPlacement:
		return true
	case refusedByServer:
		return p.probing(ctx)
	}
	return false
}

// objectStoreOnce is one attempt of objectStore.
func (p provisioner) objectStoreOnce(ctx context.Context, bucket, desc string) (jetstream.ObjectStore, error) {
	cur, err := p.current(ctx, objStream(bucket))
	if err != nil {
		return nil, err
	}
	replicas := p.replicas(bucket, cur)
	cfg := jetstream.ObjectStoreConfig{
		Bucket:      bucket,
		Description: desc,
		Storage:     p.storage(),
		Replicas:    replicas,
		MaxBytes:    p.maxBytes(bucket, cur), // storefit.go
	}
	if bucket == ObjectStoreClaims {
		cfg.TTL = p.cfg.ClaimsMaxAge // bodies of messages long consumed
	}
	o, err := p.js.CreateOrUpdateObjectStore(ctx, cfg)
	if err != nil {
		origin := client.BoundSetting(bucket)
		if p.fitted[bucket] {
			origin += " not set"
		}
		return nil, fmt.Errorf("bus: provision object store %s (bound %s, %s): %w", bucket, messages.FormatBytes(cfg.MaxBytes), origin, p.explain(err, replicas))
	}
	return o, nil
}

// ErrNotProvisioned is returned (wrapped) by Open when a stream, consumer,
// bucket or object store does not exist yet.
var ErrNotProvisioned = errors.New("bus: not provisioned")

// Open looks up everything Provision makes, without creating or changing
// anything: for processes (workers, the CLI) that join a deployment whose
// coordinator owns the configuration.
func Open(ctx context.Context, js jetstream.JetStream) (*Resources, error) {
	res := newResources()
	for _, q := range res.workQueues() {
		s, err := js.Stream(ctx, q.stream)
		if err != nil {
			return nil, notFound("stream", q.stream, err)
		}
		q.setStream(s)
		c, err := js.Consumer(ctx, q.stream, q.consumer)
		if err != nil {
			return nil, notFound("consumer", q.stream+"/"+q.consumer, err)
		}
		q.setConsumer(c)
	}
	var err error
	if res.Events, err = js.Stream(ctx, StreamEvents); err != nil {
		return nil, notFound("stream", StreamEvents, err)
	}
	if res.DLQ, err = js.Stream(ctx, StreamDLQ); err != nil {
		return nil, notFound("stream", StreamDLQ, err)
	}
	for _, b := range res.buckets() {
		if *b.dst, err = js.KeyValue(ctx, b.name); err != nil {
			return nil, notFound("key-value bucket", b.name, err)
		}
	}
	for _, o := range res.objectStores() {
		if *o.dst, err = js.ObjectStore(ctx, o.name); err != nil {
			return nil, notFound("object store", o.name, err)
		}
	}
	return res, nil
}

// notFound wraps a failed lookup of Open, as ErrNotProvisioned when the
// resource does not exist.
func notFound(kind, name string, err error) error {
	if errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrConsumerNotFound) ||
		errors.Is(err, jetstream.ErrBucketNotFound) {
		return fmt.Errorf("%w: %s %s", ErrNotProvisioned, kind, name)
	}
	return fmt.Errorf("bus: open %s %s: %w", kind, name, err)
}

// persistMode settles cfg's persist mode against the stream as it is (cur,
// nil when it is new). Asynchronous flushing is asked for where losing the
// last writes to a crash costs nothing that matters (the events stream:
// sync.go); JetStream has it for one replica on file storage only, and a
// stream keeps the mode it was made with. So it is only had on a server
// that is not part of a cluster (where a stream made with one replica may
// be raised to more later); a new stream that cannot have it gets the
// default, an existing one keeps its own, and one made asynchronous (a
// lone server that became part of a cluster) cannot be replicated: the
// error says what to do.
func persistMode(cfg *jetstream.StreamConfig, cur *jetstream.StreamConfig, clustered bool) error {
	if cur != nil {
		if cur.PersistMode == jetstream.AsyncPersistMode && cfg.Replicas > 1 {
			return fmt.Errorf("bus: provision stream %s: it was made on one node with asynchronous flushing, which JetStream cannot replicate: "+
				"delete it (nats stream rm %s: it holds progress events only) and start again to have it made with %d replicas", cfg.Name, cfg.Name, cfg.Replicas)
		}
		cfg.PersistMode = cur.PersistMode
		return nil
	}
	if clustered || cfg.Replicas > 1 || cfg.Storage != jetstream.FileStorage {
		cfg.PersistMode = jetstream.DefaultPersistMode
	}
	return nil
}
