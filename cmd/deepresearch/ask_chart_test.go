package main

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"deepresearch/agent/llm/llmtest"
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
