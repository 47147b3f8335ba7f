# deepresearch — common tasks. `make chaos` prints the figures (lines with FIGURES).
# CI runs .ci/run; these are shortcuts.
#
#   make test         the whole suite (README: go test ./...), which includes the short chaos suites
#   make chaos        the short chaos suites only: real `deepresearch serve` processes SIGKILLed and
#                     restarted on SQLite and Postgres, three replicas on one Postgres (a few minutes)
#   make chaos-long   the long versions (CHAOS_LONG=1): 50 runs per engine with ~150 kills each,
#                     200 mentions and 6 digest schedules across three replicas (tens of minutes)
#                     TestLoadReplicasPostgres (chaos/killtest): 30 concurrent runs over three serve
#                     processes on one Postgres, 1,000 with CHAOS_LONG=1 — figures in "FIGURES load3" lines:
#                     CHAOS_LONG=1 go test -count=1 -v -run TestLoadReplicasPostgres -timeout 60m ./chaos/killtest/
#   make bench-graph  graph runtime benchmarks beside LangGraph.js (scripts/bench-graph.sh)
#
# The Postgres suites need a server at 127.0.0.1:5432 (user postgres, database test), or
# DEEPRESEARCH_TEST_DATABASE_URL; they skip without one unless CI is set.

GO ?= go

.PHONY: test chaos chaos-long bench-graph

test:
	$(GO) test ./...

chaos:
	$(GO) test -count=1 -v -timeout 15m ./chaos/...

chaos-long:
	CHAOS_LONG=1 $(GO) test -count=1 -v -timeout 120m ./chaos/...

bench-graph:
	bash scripts/bench-graph.sh
