package metrics

// Family describes a metric family the binaries register: what the metrics
// table of docs/operations.md lists, what the dashboards may query, and what
// the end-to-end test looks for on each binary's /metrics.
type Family struct {
	Name   string
	Type   string   // counter, gauge or histogram
	Labels []string // besides le on histogram buckets
	// Binaries are the server binaries that expose it.
	Binaries []string
	// AfterJob: one successful job makes a sample of it non-zero (on
	// every binary that exposes it).
	AfterJob bool
}

// The server binaries, as Family.Binaries names them.
const (
	BinCoordinator   = "coordinator"
	BinLLMWorker     = "llm-worker"
	BinSandboxWorker = "sandbox-worker"
)

var (
	allBinaries = []string{BinCoordinator, BinLLMWorker, BinSandboxWorker}
	workers     = []string{BinLLMWorker, BinSandboxWorker}
	coordOnly   = []string{BinCoordinator}
)

// Families is every family of names.go, in the order of the table of
// docs/operations.md.
var Families = []Family{
	{BusMessagesTotal, "counter", []string{"consumer", "outcome"}, allBinaries, true},
	{BusHandleSeconds, "histogram", []string{"consumer"}, allBinaries, true},
	{BusInFlight, "gauge", []string{"consumer"}, allBinaries, false},
	{QueuePendingMessages, "gauge", []string{"pool"}, coordOnly, false},
	{QueueInProgressMessages, "gauge", []string{"pool"}, coordOnly, false},
	{QueueOldestPendingAge, "gauge", []string{"pool"}, coordOnly, false},
	{PoolCapacitySlots, "gauge", []string{"pool"}, coordOnly, false},
	{PoolWorkers, "gauge", []string{"pool"}, coordOnly, false},
	{PoolPaused, "gauge", []string{"pool"}, coordOnly, false},
	{CoordinatorStepsTotal, "counter", []string{"kind"}, coordOnly, true},
	{CoordinatorCASConflictsTotal, "counter", nil, coordOnly, false},
	{CoordinatorResultsRefusedTotal, "counter", nil, coordOnly, false},
	{CoordinatorResultsTakenTotal, "counter", []string{"copy"}, coordOnly, true},
	{JobsRunning, "gauge", nil, coordOnly, false},
	{JobsFinishedTotal, "counter", []string{"status", "outcome"}, coordOnly, true},
	{JobDurationSeconds, "histogram", nil, coordOnly, true},
	{JobIterations, "histogram", nil, coordOnly, true},
	{StagesDispatchedTotal, "counter", []string{"stage"}, coordOnly, true},
	{StageDeadlinesMissedTotal, "counter", []string{"stage"}, coordOnly, false},
	{StageResultsTotal, "counter", []string{"stage", "cached", "outcome"}, workers, true},
	{StageDurationSeconds, "histogram", []string{"stage", "cached"}, workers, true},
	{StageCommandsRefusedTotal, "counter", []string{"stage", "reason"}, workers, false},
	{CacheLookupsTotal, "counter", []string{"layer", "result"}, workers, true},
	{CacheSignatureFailuresTotal, "counter", []string{"reason"}, workers, false},
	{ModelCallsTotal, "counter", []string{"model", "stage", "outcome"}, []string{BinLLMWorker}, true},
	{ModelCallSeconds, "histogram", []string{"model", "stage"}, []string{BinLLMWorker}, true},
	{ModelTokensTotal, "counter", []string{"model", "stage", "direction"}, []string{BinLLMWorker}, true},
	{ModelErrorsTotal, "counter", []string{"model", "stage", "kind"}, []string{BinLLMWorker}, false},
	{ModelCostTotal, "counter", []string{"model", "stage"}, []string{BinLLMWorker}, false}, // non-zero with the model table's prices
	{SandboxRunsTotal, "counter", []string{"backend", "outcome"}, []string{BinSandboxWorker}, true},
	{SandboxRunSeconds, "histogram", []string{"backend"}, []string{BinSandboxWorker}, true},
	{SandboxBuildsTotal, "counter", []string{"backend", "outcome"}, []string{BinSandboxWorker}, true},
	{SandboxBuildSeconds, "histogram", []string{"backend"}, []string{BinSandboxWorker}, true},
	{SandboxWarmFallbacksTotal, "counter", []string{"backend", "reason"}, []string{BinSandboxWorker}, false},
}

// FamilyOf finds a family by the name of one of its series: a histogram's
// _bucket, _sum and _count series belong to it.
func FamilyOf(series string) (Family, bool) {
	for _, f := range Families {
		if series == f.Name {
			return f, true
		}
		if f.Type == "histogram" {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if series == f.Name+suffix {
					return f, true
				}
			}
		}
	}
	return Family{}, false
}
