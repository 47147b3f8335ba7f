package bot

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the bot's Prometheus metrics.
type Metrics struct {
	runs        *prometheus.CounterVec // runs reaching a state, by state
	runsActive  prometheus.Gauge       // runs this process works on
	ackLatency  prometheus.Histogram   // from receiving an envelope to its ack
	tokens      prometheus.Counter     // LLM tokens spent by runs
	slackErrors *prometheus.CounterVec // Slack API errors by method and code
	events      *prometheus.CounterVec // envelopes by type
	duplicates  prometheus.Counter     // redelivered events ignored
	dropped     prometheus.Counter     // events dropped because the queue was full
	reconnects  prometheus.Counter     // Socket Mode restarts after a failure
	runsByState *prometheus.GaugeVec   // runs in the store by state (sampled)
	collectors  []prometheus.Collector // for registration
	sampler     func(context.Context) map[RunState]int
}

func newMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "deepresearch_bot_runs_total", Help: "Runs that reached a state, by state.",
		}, []string{"state"}),
		runsActive: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "deepresearch_bot_runs_in_progress", Help: "Runs this process is working on.",
		}),
		ackLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "deepresearch_bot_ack_latency_seconds", Help: "Time from receiving a Socket Mode envelope to acknowledging it.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}),
		tokens: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "deepresearch_llm_tokens_total", Help: "LLM tokens spent by research runs.",
		}),
		slackErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "deepresearch_slack_api_errors_total", Help: "Slack Web API errors, by method and error code.",
		}, []string{"method", "code"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "deepresearch_bot_events_total", Help: "Socket Mode envelopes received, by type.",
		}, []string{"type"}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "deepresearch_bot_duplicate_events_total", Help: "Redelivered events ignored.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "deepresearch_bot_dropped_events_total", Help: "Events dropped because the handler queue was full.",
		}),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "deepresearch_bot_socket_restarts_total", Help: "Socket Mode client restarts after it gave up.",
		}),
		runsByState: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "deepresearch_bot_runs", Help: "Active runs in the store (all processes) by state, sampled when scraped.",
		}, []string{"state"}),
	}
	m.collectors = []prometheus.Collector{m.runs, m.runsActive, m.ackLatency, m.tokens, m.slackErrors, m.events, m.duplicates, m.dropped, m.reconnects, m.runsByState}
	for _, c := range m.collectors {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("bot: register metrics: %w", err)
		}
	}
	return m, nil
}

// AckLatency exposes the ack latency histogram (for tests and benchmarks).
func (m *Metrics) AckLatency() prometheus.Histogram { return m.ackLatency }

// metricsHandler samples runs by state, then serves the gatherer.
func metricsHandler(g prometheus.Gatherer, m *Metrics) http.Handler {
	h := promhttp.HandlerFor(g, promhttp.HandlerOpts{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m.sampler != nil {
			ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
			counts := m.sampler(ctx)
			cancel()
			if counts != nil {
				for _, s := range []RunState{StateQueued, StateRunning, StateWaiting} {
					m.runsByState.WithLabelValues(string(s)).Set(float64(counts[s]))
				}
			}
		}
		h.ServeHTTP(w, r)
	})
}
