#!/usr/bin/env bash
# Runs every Fuzz target of the module briefly (FUZZTIME, default 5s each).
# A run that fails only with the fuzzing engine's own "context deadline
# exceeded" at the end of -fuzztime (no failing input written; the engine
# was still minimising a new input when time ran out) is run once more; a
# real failure (a crasher under testdata/fuzz) fails at once.
set -euo pipefail
cd "$(dirname "$0")/.."
t="${FUZZTIME:-5s}"
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -hoE '^func (Fuzz[A-Za-z0-9_]+)' "$dir"/*_test.go 2>/dev/null | awk '{print $2}'); do
    for attempt in 1 2; do
      echo "fuzz $pkg $f ($t, attempt $attempt)"
      out=$(mktemp)
      if go test -run '^$' -fuzz "^${f}\$" -fuzztime "$t" "$pkg" 2>&1 | tee "$out"; then
        rm -f "$out"
        break
      fi
      if [ "$attempt" = 1 ] && grep -q 'context deadline exceeded' "$out" && ! grep -q 'Failing input written' "$out"; then
        echo "fuzz: $f stopped with the engine's deadline error, not a failing input; running it again"
        rm -f "$out"
        continue
      fi
      rm -f "$out"
      exit 1
    done
  done
done
