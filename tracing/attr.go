package tracing

import "go.opentelemetry.io/otel/attribute"

// Attributes of deepresearch's own spans (the model calls use the GenAI
// semantic conventions, gen_ai.*; pages and searches the HTTP and server
// ones where they fit).
const (
	RunID        = attribute.Key("deepresearch.run.id")
	ThreadID     = attribute.Key("deepresearch.thread.id")
	Requester    = attribute.Key("deepresearch.requester.hash") // Hash of the Slack user id
	Language     = attribute.Key("deepresearch.language")
	Outcome      = attribute.Key("deepresearch.outcome")
	Turn         = attribute.Key("deepresearch.turn")
	Call         = attribute.Key("deepresearch.call") // start, resume, continue, cancel
	Role         = attribute.Key("deepresearch.role")
	Node         = attribute.Key("deepresearch.graph.node")
	Namespace    = attribute.Key("deepresearch.graph.namespace")
	Step         = attribute.Key("deepresearch.graph.step")
	Task         = attribute.Key("deepresearch.graph.task")
	Attempts     = attribute.Key("deepresearch.attempts")
	Subtask      = attribute.Key("deepresearch.subtask")
	CacheHit     = attribute.Key("deepresearch.cache_hit")
	Bytes        = attribute.Key("deepresearch.bytes")
	Results      = attribute.Key("deepresearch.results")
	Cited        = attribute.Key("deepresearch.citations.cited")
	Verified     = attribute.Key("deepresearch.citations.verified")
	Dropped      = attribute.Key("deepresearch.citations.dropped")
	LinkKind     = attribute.Key("deepresearch.link") // on a span link: resumed, previous_turn
	Cost         = attribute.Key("deepresearch.cost_usd")
	Wait         = attribute.Key("deepresearch.wait_ms")
	ErrorKind    = attribute.Key("error.type")
	EnvelopeType = attribute.Key("slack.envelope.type")
	AckLatency   = attribute.Key("slack.ack.latency_ms")
)

// Link kinds.
const (
	LinkResumed      = "resumed"       // the same turn, carried on in a later call
	LinkPreviousTurn = "previous_turn" // the thread's turn before this one
)
