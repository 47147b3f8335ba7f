package faults

import (
	"fmt"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// figure logs a compact line and the same as "CHAOS_FIGURES name ...",
// printed on stdout so it can be grepped from go test output.
func figure(t testing.TB, name, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf(format, args...)
	t.Logf("%s: %s", name, line)
	fmt.Printf("CHAOS_FIGURES %s %s\n", name, line)
}

// metricValue sums the samples of a metric on the bot's /metrics.
func metricValue(t testing.TB, w *world, name string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	w.bot.Handler(nil).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	var sum float64
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if !strings.HasPrefix(line, name) || strings.HasPrefix(line, "#") {
			continue
		}
		rest := strings.TrimPrefix(line, name)
		if rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		f := strings.Fields(rest)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}

func TestRSS(t *testing.T) {
	cur, peak := RSS()
	if cur == 0 && peak == 0 {
		t.Skip("no /proc here")
	}
	if cur <= 0 || peak < cur {
		t.Errorf("RSS = %d, peak %d", cur, peak)
	}
	if cur, peak := ProcRSS(-1); cur != 0 || peak != 0 {
		t.Errorf("ProcRSS of no process = %d, %d", cur, peak)
	}
}
