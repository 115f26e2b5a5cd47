package execution

import (
	"github.com/prometheus/client_golang/prometheus"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/execution/adapter"
)

// Model calls (docs/models.md) fail in their own ways — a provider's rate
// limit, a conversation past the model's context, a refusal, a timeout —
// and are counted apart from tools' failures, so that an alert on a
// flapping model does not read as a flapping tool.

// modelFailures counts model-call failures by reason, from the process's
// start: steward_model_call_failures_total.
type modelFailures struct{ counter *prometheus.CounterVec }

func newModelFailures() modelFailures {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "steward_model_call_failures_total",
		Help: "Model calls (llm.chat tools) that failed, by reason: rate_limited, context_length, refused, timeout, server_error, unreadable. Counted by the worker that made the call, from its start.",
	}, []string{"reason"})
	for _, r := range []string{adapter.ModelRateLimited, adapter.ModelContextLength, adapter.ModelRefused, adapter.ModelTimeout, adapter.ModelServerError, adapter.ModelUnreadable} {
		c.WithLabelValues(r) // every reason has a series, at zero too
	}
	return modelFailures{counter: c}
}

// note counts res if it is a model call's failure.
func (m modelFailures) note(res adapter.Result) {
	if res.ModelFailure != "" {
		m.counter.WithLabelValues(res.ModelFailure).Inc()
	}
}

// Collector returns the plane's metrics: the model-call failures.
func (p *Plane) Collector() prometheus.Collector { return p.modelFailures.counter }

// isModel reports whether tool is a model Steward calls itself.
func isModel(tool *stewardv1.ToolContract) bool { return tool.GetModel() != nil }
