package metrics

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/internal/llm"
)

// Model is llm.Observer on a Prometheus registry: ModelCallsTotal,
// ModelCallSeconds, ModelTokensTotal and ModelErrorsTotal.
type Model struct {
	calls  *prometheus.CounterVec
	secs   *prometheus.HistogramVec
	tokens *prometheus.CounterVec
	errs   *prometheus.CounterVec
	cost   *prometheus.CounterVec
	seen   sync.Map // model and stage pairs whose series exist
}

var _ llm.Observer = (*Model)(nil)

// NewModel registers the model-call families on reg (or shares the ones
// already there).
func NewModel(reg prometheus.Registerer) (*Model, error) {
	m := &Model{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: ModelCallsTotal,
			Help: "Model API attempts (each retry is one), by model, stage and outcome (ok or error)."},
			[]string{"model", "stage", "outcome"}),
		secs: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: ModelCallSeconds,
			Help: "Latency of model API attempts, by model and stage.", Buckets: StageBuckets},
			[]string{"model", "stage"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: ModelTokensTotal,
			Help: "Tokens the model API reported, by model, stage and direction (input or output)."},
			[]string{"model", "stage", "direction"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: ModelErrorsTotal,
			Help: "Failed model API attempts and unusable replies, by model, stage and kind " +
				"(rate_limited, server_error, timeout, network, client_error, too_large, malformed, invalid_reply)."},
			[]string{"model", "stage", "kind"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: ModelCostTotal,
			Help: "What model calls cost, in the model table's currency, by model (the table's prices; 0 for a model without)."},
			[]string{"model"}),
	}
	var err error
	if m.calls, err = register(reg, m.calls); err != nil {
		return nil, fmt.Errorf("metrics: register %s: %w", ModelCallsTotal, err)
	}
	if m.secs, err = register(reg, m.secs); err != nil {
		return nil, fmt.Errorf("metrics: register %s: %w", ModelCallSeconds, err)
	}
	if m.tokens, err = register(reg, m.tokens); err != nil {
		return nil, fmt.Errorf("metrics: register %s: %w", ModelTokensTotal, err)
	}
	if m.errs, err = register(reg, m.errs); err != nil {
		return nil, fmt.Errorf("metrics: register %s: %w", ModelErrorsTotal, err)
	}
	if m.cost, err = register(reg, m.cost); err != nil {
		return nil, fmt.Errorf("metrics: register %s: %w", ModelCostTotal, err)
	}
	return m, nil
}

// CallDone implements llm.Observer.
func (m *Model) CallDone(model, stage, kind string, elapsed time.Duration, inputTokens, outputTokens int) {
	m.firstCall(model, stage)
	outcome := "ok"
	if kind != llm.CallOK {
		outcome = "error"
		m.errs.WithLabelValues(model, stage, kind).Inc()
	}
	m.calls.WithLabelValues(model, stage, outcome).Inc()
	m.secs.WithLabelValues(model, stage).Observe(elapsed.Seconds())
	m.tokens.WithLabelValues(model, stage, "input").Add(float64(inputTokens))
	m.tokens.WithLabelValues(model, stage, "output").Add(float64(outputTokens))
}

// Cost adds what a call of model cost (llm.Router's usage callback).
func (m *Model) Cost(model string, cost float64) {
	m.cost.WithLabelValues(model).Add(cost)
}

// errorKinds are ModelErrorsTotal's kinds.
var errorKinds = []string{llm.CallRateLimited, llm.CallServerError, llm.CallTimeout, llm.CallNetwork,
	llm.CallClientError, llm.CallTooLarge, llm.CallMalformed, llm.InvalidReply}

// firstCall makes the error series of a model and stage on its first
// call, at zero, so error rates and ratios have data before the first error.
func (m *Model) firstCall(model, stage string) {
	key := model + "\x00" + stage
	if _, seen := m.seen.LoadOrStore(key, true); seen {
		return
	}
	m.calls.WithLabelValues(model, stage, "error")
	for _, kind := range errorKinds {
		m.errs.WithLabelValues(model, stage, kind)
	}
}

// InvalidReply implements llm.Observer.
func (m *Model) InvalidReply(model, stage string) {
	m.errs.WithLabelValues(model, stage, llm.InvalidReply).Inc()
}
