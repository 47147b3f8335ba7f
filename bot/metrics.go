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
	collectors  collectors             // for registration
	sampler     func(context.Context) map[research.RunState]int

	updateSkipped prometheus.Counter     // progress edits skipped for the chat.update budget
	updateWait    prometheus.Histogram   // time a final edit waited for a chat.update token
	postWait      prometheus.Histogram   // time a chat.postMessage waited for its channel's pace
	refusals      *prometheus.CounterVec // refusal replies by kind and how they were delivered
	liveInstances prometheus.Gauge       // replicas the workspace's Slack budgets are split among
	ratings       *prometheus.CounterVec // clicks on the feedback buttons, by value
}

func newMetrics(reg prometheus.Registerer) (*Metrics, error) {
	var r collectors
	m := &Metrics{
		runs:       r.counterVec("deepresearch_bot_runs_total", "Runs that reached a state, by state.", "state"),
		runsActive: r.gauge("deepresearch_bot_runs_in_progress", "Runs this process is working on."),
		ackLatency: r.histogram("deepresearch_bot_ack_latency_seconds", "Time from receiving a Socket Mode envelope to acknowledging it.",
			.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1),
		tokens:        r.counter("deepresearch_llm_tokens_total", "LLM tokens spent by research runs."),
		slackErrors:   r.counterVec("deepresearch_slack_api_errors_total", "Slack Web API errors, by method and error code.", "method", "code"),
		events:        r.counterVec("deepresearch_bot_events_total", "Socket Mode envelopes received, by type.", "type"),
		duplicates:    r.counter("deepresearch_bot_duplicate_events_total", "Redelivered events ignored."),
		dropped:       r.counter("deepresearch_bot_dropped_events_total", "Received envelopes given up: unreadable, or their handling never finished after several takeovers."),
		deferred:      r.counter("deepresearch_bot_deferred_events_total", "Envelopes left in the inbox for recovery because the handler queue was full."),
		recovered:     r.counter("deepresearch_bot_inbox_recovered_total", "Inbox entries taken over by recovery (their receiver died or had no room)."),
		inboxErrors:   r.counter("deepresearch_bot_inbox_errors_total", "Envelopes not acked because storing them in the inbox failed (Slack delivers them again)."),
		reconnects:    r.counter("deepresearch_bot_socket_restarts_total", "Socket Mode client restarts after it gave up."),
		runsByState:   r.gaugeVec("deepresearch_bot_runs", "Active runs in the store (all processes) by state, sampled when scraped.", "state"),
		updateSkipped: r.counter("deepresearch_slack_update_skipped_total", "Progress edits skipped because the chat.update budget was kept for final pictures."),
		updateWait: r.histogram("deepresearch_slack_update_wait_seconds", "Time a final status edit waited for a chat.update token.",
			.001, .01, .1, .5, 1, 2.5, 5, 10, 30, 60, 120),
		postWait: r.histogram("deepresearch_slack_post_wait_seconds", "Time a chat.postMessage waited for its channel's pace (about 1/s).",
			.001, .01, .1, .5, 1, 2.5, 5, 10, 30, 60),
		refusals:      r.counterVec("deepresearch_bot_refusals_total", "Refusal replies (busy, limit, too_long, help) by kind and delivery (thread, ephemeral, dropped).", "kind", "how"),
		ratings:       r.counterVec("deepresearch_bot_feedback_total", "Clicks on the feedback buttons under reports and digests, by value (positive, negative).", "value"),
		liveInstances: r.gauge("deepresearch_bot_live_instances", "Bot processes on the store seen recently (this one included); the workspace's Slack budgets are split among them."),
	}
	m.collectors = r
	for _, c := range m.collectors {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("bot: register metrics: %w", err)
		}
	}
	return m, nil
}

// collectors makes metrics and keeps them, in order, for registration.
type collectors []prometheus.Collector

func keep[C prometheus.Collector](cs *collectors, c C) C {
	*cs = append(*cs, c)
	return c
}

func (cs *collectors) counter(name, help string) prometheus.Counter {
	return keep(cs, prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help}))
}

func (cs *collectors) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return keep(cs, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels))
}

func (cs *collectors) gauge(name, help string) prometheus.Gauge {
	return keep(cs, prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help}))
}

func (cs *collectors) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return keep(cs, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels))
}

func (cs *collectors) histogram(name, help string, buckets ...float64) prometheus.Histogram {
	return keep(cs, prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}))
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
