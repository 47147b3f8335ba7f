package main

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"deepresearch/agent/llm/llmtest"
	"deepresearch/bot/slackfake"
	"deepresearch/research"
	"deepresearch/slackstate"
)

// pricePages are two products' prices, one in dollars and one in euros,
// and the euro's rate.
var pricePages = map[string][2]string{
	"/acme":  {"Acme X1 launch price", "The Acme X1 costs $1,299 at launch. It ships in May to every market."},
	"/bolt":  {"Bolt B2 launch price", "The Bolt B2 retails for €999 at launch. It ships in June to every market."},
	"/rates": {"Euro reference rate for launch prices", "The reference rate was 1 EUR = 1.08 USD at launch. Launch prices in euros convert to dollars at this rate."},
}

var (
	dollarsRE = regexp.MustCompile(`\$([\d,]+)`)
	eurosRE   = regexp.MustCompile(`€([\d,]+)`)
	rateRE    = regexp.MustCompile(`1 EUR = ([\d.]+) USD`)
)

// tableProposal is the fake analyst: a price for every quote with a
// dollar or euro amount, the rate a quote states, and one fabricated
// value (a price no quote writes). No prices: an empty proposal.
func tableProposal(prompt string, ev *regexp.Regexp) llmtest.Reply {
	var cells []map[string]any
	var rates []map[string]any
	for _, m := range ev.FindAllStringSubmatch(prompt, -1) {
		n, _ := strconv.Atoi(m[1])
		q, title := m[3], m[4]
		row := strings.TrimSuffix(title, " launch price")
		value := func(s string) float64 { v, _ := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64); return v }
		switch {
		case rateRE.MatchString(q):
			rates = append(rates, map[string]any{"from": "EUR", "to": "USD", "rate": value(rateRE.FindStringSubmatch(q)[1]), "evidence": n})
		case dollarsRE.MatchString(q):
			cells = append(cells, map[string]any{"row": row, "column": "Price", "value": value(dollarsRE.FindStringSubmatch(q)[1]), "unit": "USD", "evidence": n},
				map[string]any{"row": row + " Pro", "column": "Price", "value": 1777, "unit": "USD", "evidence": n})
		case eurosRE.MatchString(q):
			cells = append(cells, map[string]any{"row": row, "column": "Price", "value": value(eurosRE.FindStringSubmatch(q)[1]), "unit": "EUR", "evidence": n})
		}
	}
	if len(cells) < 2 {
		cells = []map[string]any{}
	}
	return llmtest.JSON(map[string]any{"title": "Launch prices", "unit": "USD", "columns": []string{"Price"}, "cells": cells, "rates": rates})
}

func TestAskWritesChartBesideReport(t *testing.T) {
	vars, _ := newAskWorld(t, worldOpts{pages: pricePages})
	dir := t.TempDir()
	out := filepath.Join(dir, "report.md")
	var stdout, stderr bytes.Buffer
	err := runAsk(context.Background(), []string{"-o", out, "How do the launch prices of the Acme X1 and the Bolt B2 compare?"}, getenv(vars), strings.NewReader(""), &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	report, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	chart := filepath.Join(dir, "report-chart-1.png")
	b, err := os.ReadFile(chart)
	if err != nil {
		t.Fatalf("no chart beside the report: %v\n%s", err, report)
	}
	if _, err := png.Decode(bytes.NewReader(b)); err != nil {
		t.Errorf("chart: %v", err)
	}
	for _, s := range []string{"](report-chart-1.png)", "| Acme X1 | 1299 [^", "| Bolt B2 | 1078.92 (999 EUR × 1.08) [^"} {
		if !strings.Contains(string(report), s) {
			t.Errorf("report lacks %q:\n%s", s, report)
		}
	}
	if strings.Contains(string(report), "1777") || strings.Contains(string(report), " Pro") {
		t.Errorf("the fabricated price reached the report:\n%s", report)
	}
	if !strings.Contains(stderr.String(), "chart written to "+chart) {
		t.Errorf("stderr does not say where the chart went:\n%s", stderr.String())
	}

	// on stdout: the chart goes to --chart-dir, and stderr says so
	stdout.Reset()
	stderr.Reset()
	charts := t.TempDir()
	if err := runAsk(context.Background(), []string{"--chart-dir", charts, "How do the launch prices of the Acme X1 and the Bolt B2 compare?"}, getenv(vars), strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	m := regexp.MustCompile(`chart written to (\S+)`).FindStringSubmatch(stderr.String())
	if m == nil || filepath.Dir(m[1]) != charts {
		t.Fatalf("stderr: %s", stderr.String())
	}
	if _, err := os.Stat(m[1]); err != nil {
		t.Error(err)
	}
	if !strings.Contains(stdout.String(), fmt.Sprintf("](%s)", m[1])) {
		t.Errorf("the report on stdout does not link %s:\n%s", m[1], stdout.String())
	}
}

// TestServeEndToEndPriceChart runs the real serve against slackfake, the
// real agent and a model whose analyst proposes the two products' prices,
// the euro's rate and a fabricated price: the thread gets the report with a
// table of verified cells (the euro price converted at the cited rate, the
// fabricated price dropped) and the chart as a PNG file of its own.
func TestServeEndToEndPriceChart(t *testing.T) {
	fake := slackfake.New()
	defer fake.Close()
	vars, _ := newAskWorld(t, worldOpts{pages: pricePages})
	vars["SLACK_BOT_TOKEN"], vars["SLACK_APP_TOKEN"], vars["SLACK_API_URL"] = fake.BotToken(), fake.AppToken(), fake.APIURL()
	vars["DEEPRESEARCH_HTTP_ADDR"] = "off"
	vars["DEEPRESEARCH_APPROVE_DRAFT"] = "false"
	srv := startServe(t, fake, vars, 90*time.Second)
	ctx, waitFor := srv.ctx, srv.waitFor
	srv.connected(1)
	sent, err := fake.SendAppMention(ctx, slackfake.AppMention{User: "U1", Channel: "C1", Text: "How do the launch prices of the Acme X1 and the Bolt B2 compare?"})
	if err != nil {
		t.Fatal(err)
	}
	threadID := slackstate.ThreadKey{Team: fake.TeamID(), Channel: "C1", ThreadTS: sent.TS}.ThreadID()
	var state research.RunState
	waitFor("the run to end", func() bool {
		r, err := latestRun(ctx, vars, threadID)
		state = r.State
		return err == nil && !r.State.Active()
	})
	if state != research.StateDone {
		t.Fatalf("run ended %s\n%s", state, srv.stderr.String())
	}
	var report, chart slackfake.File
	for _, f := range fake.Files() {
		switch {
		case !f.Completed || f.ThreadTS != sent.TS:
		case strings.HasSuffix(f.Name, ".md"):
			report = f
		case strings.HasSuffix(f.Name, ".png"):
			chart = f
		}
	}
	if report.ID == "" || chart.ID == "" {
		t.Fatalf("want the report and its chart in the thread; files: %d", len(fake.Files()))
	}
	if _, err := png.Decode(bytes.NewReader(chart.Content)); err != nil {
		t.Errorf("chart: %v", err)
	}
	body := string(report.Content)
	for _, s := range []string{"](" + chart.Name + ")", "| Acme X1 | 1299 [^", "| Bolt B2 | 1078.92 (999 EUR × 1.08) [^"} {
		if !strings.Contains(body, s) {
			t.Errorf("report lacks %q:\n%s", s, body)
		}
	}
	if strings.Contains(body, "1777") || strings.Contains(body, " Pro") {
		t.Errorf("the fabricated price reached the report:\n%s", body)
	}
	// every footnote quotes its page verbatim
	defs := footnoteDefRE.FindAllStringSubmatch(body, -1)
	if len(defs) < 3 {
		t.Errorf("%d footnotes:\n%s", len(defs), body)
	}
	for _, d := range defs {
		u, err := url.Parse(d[4])
		if page, ok := pricePages[u.Path]; err != nil || !ok || !strings.Contains(page[1], d[2]) {
			t.Errorf("footnote %s quotes %q, which is not on %s", d[1], d[2], d[4])
		}
	}
	if o := fake.Orphans(); len(o) != 0 {
		t.Errorf("unshared files left: %d", len(o))
	}
	srv.exit()
}
