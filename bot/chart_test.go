package bot_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"deepresearch/bot/slackfake"
	"deepresearch/research"
	"deepresearch/schedule"
)

// pngBytes stands for a chart: the bot shares the bytes as they are.
var pngBytes = []byte("\x89PNG\r\n\x1a\n chart bytes")

// TestChartSharedInThread: a report with a chart is shared with the chart
// as a file of its own in the same thread, after the report, and the
// report's link names the chart's file.
func TestChartSharedInThread(t *testing.T) {
	h := newHarness(t)
	h.res.charts = []research.Chart{{Name: "chart-1.png", Title: "Launch prices (USD)", PNG: pngBytes}}
	h.start(noDraftApproval)
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "how do the prices of the X1 and the B2 compare?", "")
	h.waitState(ctx, "C1", sent.TS, research.StateDone)
	files := h.files("C1", sent.TS)
	if len(files) != 2 {
		t.Fatalf("%d files in the thread, want the report and its chart", len(files))
	}
	report, chart := files[0], files[1]
	if !strings.HasSuffix(chart.Name, "-chart-1.png") || strings.TrimSuffix(chart.Name, "-chart-1.png") != strings.TrimSuffix(report.Name, ".md") {
		t.Errorf("chart file %q for report %q", chart.Name, report.Name)
	}
	if !bytes.Equal(chart.Content, pngBytes) || chart.Title != "Launch prices (USD)" || chart.SnippetType != "" {
		t.Errorf("chart file %+v", chart)
	}
	if !strings.Contains(string(report.Content), "]("+chart.Name+")") {
		t.Errorf("the report does not link %s:\n%s", chart.Name, report.Content)
	}
	if o := h.fake.Orphans(); len(o) != 0 {
		t.Errorf("unshared files left: %+v", o)
	}
}

// TestDigestChartPostedThroughFake: a digest whose report has a chart
// shares the chart as a PNG file in the digest's thread, after the report,
// which links it by the file's name.
func TestDigestChartPostedThroughFake(t *testing.T) {
	h := newDigestHarness(t, resultResearcher(research.Result{Title: "Prices", WriterSummary: "- X costs $5", Report: "# Prices\n\n![Chart: Prices (USD)](chart-1.png)\n",
		Charts: []research.Chart{{Name: "chart-1.png", Title: "Prices (USD)", PNG: pngBytes}}}))
	d := fireDigest(t, h, "prices").Digest
	files := h.fake.Files()
	if len(files) != 2 {
		t.Fatalf("%d files, want the report and its chart", len(files))
	}
	report, chart := files[0], files[1]
	if !chart.Completed || chart.ThreadTS != d.MessageTS || !bytes.Equal(chart.Content, pngBytes) || !strings.HasSuffix(chart.Name, "-chart-1.png") {
		t.Errorf("chart file %+v", chart)
	}
	if !strings.Contains(string(report.Content), "]("+chart.Name+")") {
		t.Errorf("the report does not link %s:\n%s", chart.Name, report.Content)
	}
}

// TestChartShareRefusedLeavesNoFile: a chart whose share Slack refuses is
// deleted (no unshared file is left) and the run is done with its report.
func TestChartShareRefusedLeavesNoFile(t *testing.T) {
	h := newHarness(t)
	h.res.charts = []research.Chart{{Name: "chart-1.png", Title: "Launch prices (USD)", PNG: pngBytes}}
	h.fake.InjectFault("files.completeUploadExternal", slackfake.Fault{Times: 1}) // the report's share goes through
	h.fake.InjectFault("files.completeUploadExternal", slackfake.Fault{Error: "invalid_arguments", Times: 5})
	h.start(noDraftApproval)
	ctx := testCtx(t)
	sent := h.mention(ctx, "U1", "C1", "how do the prices of the X1 and the B2 compare?", "")
	h.waitState(ctx, "C1", sent.TS, research.StateDone)
	files := h.files("C1", sent.TS)
	if len(files) != 1 || !strings.HasSuffix(files[0].Name, ".md") {
		t.Fatalf("files in the thread: %d, want the report alone", len(files))
	}
	if o := h.fake.Orphans(); len(o) != 0 {
		t.Errorf("unshared files left: %d (%s)", len(o), o[0].Name)
	}
}

// TestDigestChartStagedBeforeShare: a digest's chart file is recorded as
// staged while it is shared, as a run's charts are, so that a process that
// dies between the two leaves it to the next attempt (deleted, not left
// unshared); once shared it is no longer staged.
func TestDigestChartStagedBeforeShare(t *testing.T) {
	h := newDigestHarness(t, resultResearcher(research.Result{Title: "Prices", WriterSummary: "- X costs $5", Report: "# Prices\n\n![Chart: Prices (USD)](chart-1.png)\n",
		Charts: []research.Chart{{Name: "chart-1.png", Title: "Prices (USD)", PNG: pngBytes}}}))
	h.fake.InjectFault("files.completeUploadExternal", slackfake.Fault{Times: 1})                     // the report's share goes through
	h.fake.InjectFault("files.completeUploadExternal", slackfake.Fault{Delay: time.Second, Times: 1}) // the chart's waits
	runID := schedule.RunID("s1", time.Date(2026, 3, 9, 9, 0, 0, 0, time.FixedZone("JST", 9*3600)))
	ctx := testCtx(t)
	stop, seen := make(chan struct{}), make(chan map[string]bool, 1)
	go func() {
		ids := map[string]bool{}
		defer func() { seen <- ids }()
		for {
			if staged, err := h.runs.StagedUploads(ctx, runID); err == nil {
				for _, id := range staged {
					ids[id] = true
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	fireDigest(t, h, "prices")
	close(stop)
	staged := <-seen
	files := h.fake.Files()
	if len(files) != 2 {
		t.Fatalf("%d files, want the report and its chart", len(files))
	}
	if !staged[files[1].ID] {
		t.Errorf("staged while sharing: %v, want the chart %s among them", staged, files[1].ID)
	}
	if left, err := h.runs.StagedUploads(ctx, runID); err != nil || len(left) != 0 {
		t.Errorf("staged after the digest: %v, %v", left, err)
	}
}
