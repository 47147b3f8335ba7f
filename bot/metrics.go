package bot

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"deepresearch/research"

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
	dropped     prometheus.Counter     // inbox entries given up (unreadable, or never finished after many takeovers)
	deferred    prometheus.Counter     // envelopes left in the inbox for recovery because the queue was full
	recovered   prometheus.Counter     // inbox entries taken over by recovery
	inboxErrors prometheus.Counter     // envelopes not acked because the inbox write failed
	reconnects  prometheus.Counter     // Socket Mode restarts after a failure
	runsByState *prometheus.GaugeVec   // runs in the store by state (sampled)
	collectors  []prometheus.Collector // for registration
	sampler     func(context.Context) map[research.RunState]int

	updateSkipped prometheus.Counter     // progress edits skipped for the chat.update budget
	updateWait    prometheus.Histogram   // time a final edit waited for a chat.update token
	postWait      prometheus.Histogram   // time a chat.postMessage waited for its channel's pace
	refusals      *prometheus.CounterVec // refusal replies by kind and how they were delivered
	liveInstances prometheus.Gauge       // replicas the workspace's Slack budgets are split among
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
			Name: "deepresearch_bot_dropped_events_total", Help: "Received envelopes given up: unreadable, or their handling never finished after several takeovers.",
		}),
		deferred: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "deepresearch_bot_deferred_events_total", Help: "Envelopes left in the inbox for recovery because the handler queue was full.",
		}),
		recovered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "deepresearch_bot_inbox_recovered_total", Help: "Inbox entries taken over by recovery (their receiver died or had no room).",
		}),
		inboxErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "deepresearch_bot_inbox_errors_total", Help: "Envelopes not acked because storing them in the inbox failed (Slack delivers them again).",
		}),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "deepresearch_bot_socket_restarts_total", Help: "Socket Mode client restarts after it gave up.",
		}),
		runsByState: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "deepresearch_bot_runs", Help: "Active runs in the store (all processes) by state, sampled when scraped.",
		}, []string{"state"}),
		updateSkipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "deepresearch_slack_update_skipped_total", Help: "Progress edits skipped because the chat.update budget was kept for final pictures.",
		}),
		updateWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "deepresearch_slack_update_wait_seconds", Help: "Time a final status edit waited for a chat.update token.",
			Buckets: []float64{.001, .01, .1, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}),
		postWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "deepresearch_slack_post_wait_seconds", Help: "Time a chat.postMessage waited for its channel's pace (about 1/s).",
			Buckets: []float64{.001, .01, .1, .5, 1, 2.5, 5, 10, 30, 60},
		}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "deepresearch_bot_refusals_total", Help: "Refusal replies (busy, limit, too_long, help) by kind and delivery (thread, ephemeral, dropped).",
		}, []string{"kind", "how"}),
		liveInstances: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "deepresearch_bot_live_instances", Help: "Bot processes on the store seen recently (this one included); the workspace's Slack budgets are split among them.",
		}),
	}
	m.collectors = []prometheus.Collector{m.runs, m.runsActive, m.ackLatency, m.tokens, m.slackErrors, m.events, m.duplicates, m.dropped, m.deferred, m.recovered, m.inboxErrors, m.reconnects, m.runsByState,
		m.updateSkipped, m.updateWait, m.postWait, m.refusals, m.liveInstances}
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
				for _, s := range []research.RunState{research.StateQueued, research.StateRunning, research.StateWaiting} {
					m.runsByState.WithLabelValues(string(s)).Set(float64(counts[s]))
				}
			}
		}
		h.ServeHTTP(w, r)
	})
}
