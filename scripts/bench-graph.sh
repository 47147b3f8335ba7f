#!/usr/bin/env bash
# Runs the graph workloads (W1 W1m W2 W3 W3b W4) on our runtime and on the
# LangGraph.js peer harness, interleaved on the same machine, RUNS times each
# (default 3, a fresh process per run), and prints both medians and ratios.
#
#   bash scripts/bench-graph.sh                 # needs ../shared beside the repo, node and PostgreSQL
#   RUNS=5 WORKLOADS="W3 W4" bash scripts/bench-graph.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${RUNS:-3}"
WORKLOADS="${WORKLOADS:-W1 W1m W2 W3 W3b W4}"
PEER="${PEER:-../shared/bench/graph/peers/langgraphjs}"
export PG_URL="${PG_URL:-postgres://postgres@127.0.0.1:5432/bench}"
out="$(mktemp -d)"
psql "${PG_URL%/*}/postgres" -qc 'CREATE DATABASE bench' 2>/dev/null || true
go build -o "$out/graphbench" ./cmd/graphbench
(cd "$PEER" && [ -d node_modules ] || npm install --no-package-lock --no-audit --no-fund >&2)
echo "nproc $(nproc); $(free -h | awk '/Mem:/{print "mem "$2}'); loadavg $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq 1 "$RUNS"); do
  for w in $WORKLOADS; do
    echo "run $r/$RUNS $w" >&2
    (cd "$PEER" && node bench.mjs "$w") >> "$out/peer.jsonl" 2>>"$out/peer.err"
    "$out/graphbench" "$w" >> "$out/go.jsonl" 2>>"$out/go.err"
  done
done
node "$PEER/median.mjs" "$out/peer.jsonl" | grep '^{' > "$out/peer.med"
node "$PEER/median.mjs" "$out/go.jsonl" | grep '^{' > "$out/go.med"
echo "## LangGraph.js medians"; cat "$out/peer.med"
echo "## deepresearch/graph medians"; cat "$out/go.med"
node - "$out/peer.med" "$out/go.med" <<'JS'
const fs = require("fs");
const load = (f) => Object.fromEntries(fs.readFileSync(f, "utf8").trim().split("\n").map((l) => JSON.parse(l)).map((r) => [r.workload, r]));
const [peer, ours] = [load(process.argv[2]), load(process.argv[3])];
console.log("\n| workload | peer ops/s | ours ops/s | throughput × | peer bytes/inv | ours bytes/inv | bytes ratio | peer CPU s | ours CPU s | ours runs (s) |");
console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
for (const w of Object.keys(ours)) {
  const p = peer[w], o = ours[w];
  if (!p) continue;
  const bp = p.bytes_per_invocation, bo = o.bytes_per_invocation;
  console.log(`| ${w} | ${p.ops_per_s.toFixed(2)} | ${o.ops_per_s.toFixed(2)} | ${(o.ops_per_s / p.ops_per_s).toFixed(1)} | ${bp ?? ""} | ${bo ?? ""} | ${bp ? (bo / bp).toFixed(3) : ""} | ${p.cpu_s.toFixed(2)} | ${o.cpu_s.toFixed(3)} | ${o.seconds_runs.map((x) => x.toFixed(3)).join(", ")} |`);
}
JS
echo "raw lines: $out" >&2
