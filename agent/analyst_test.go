package agent_test

import (
	"bytes"
	"image/png"
	"regexp"
	"strings"
	"testing"

	"deepresearch/agent"
	"deepresearch/agent/agenttest"
	"deepresearch/agent/llm/llmtest"
	"deepresearch/tools/sandbox"
)

// PricePages are a small web about two products' prices, one in dollars
// and one in euros, and the euro's rate.
func pricePages() []agenttest.Page {
	return []agenttest.Page{
		{URL: "https://acme.example/x1", Title: "Acme X1 launch", Text: "The Acme X1 costs $1,299 at launch. It ships in May."},
		{URL: "https://bolt.example/b2", Title: "Bolt B2 pricing", Text: "The Bolt B2 retails for €999 in Germany. It ships in June."},
		{URL: "https://ecb.example/rates", Title: "Euro reference rate for launch prices", Text: "The reference rate was 1 EUR = 1.08 USD on 1 March. Launch prices in euros convert to dollars at this rate."},
	}
}

// priceTable is the analyst's proposal from its prompt: the two prices,
// the rate, and one fabricated value (a discount price no page states).
func priceTable(prompt string) llmtest.Reply {
	num := func(word string) int {
		for _, e := range agenttest.ParseEvidence(prompt) {
			if strings.Contains(e.Quote, word) {
				return e.N
			}
		}
		return 0
	}
	acme, bolt, rate := num("Acme"), num("Bolt"), num("EUR =")
	return llmtest.JSON(map[string]any{
		"title": "Launch prices", "unit": "USD", "columns": []string{"Price"},
		"cells": []map[string]any{
			{"row": "Acme X1", "column": "Price", "value": 1299, "unit": "USD", "evidence": acme},
			{"row": "Bolt B2", "column": "Price", "value": 999, "unit": "EUR", "evidence": bolt},
			{"row": "Acme X1 (discount)", "column": "Price", "value": 1149, "unit": "USD", "evidence": acme},
		},
		"rates": []map[string]any{{"from": "EUR", "to": "USD", "rate": 1.08, "evidence": rate}},
	})
}

func TestPriceTableAndChart(t *testing.T) {
	e := newEnv(t)
	e.web.Pages = pricePages()
	e.web.Find = func(string) []agenttest.Page { return pricePages() }
	e.brain.Table = priceTable
	r, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.coder = r
	res := e.start("prices", agent.Request{Question: "How do the launch prices of the Acme X1 and the Bolt B2 compare?", Language: "en", NoClarify: true})
	if res.Status != agent.StatusDone {
		t.Fatalf("status %s", res.Status)
	}
	rep := res.Report
	i := strings.Index(rep, "## Data")
	if i < 0 {
		t.Fatalf("no data section:\n%s", rep)
	}
	data := rep[i:]
	data = data[:strings.Index(data, "\n## ")+1]
	// every value of the table cites a footnote that quotes its number
	foot := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\[\^(\d+)\]: (.*)$`).FindAllStringSubmatch(rep, -1) {
		foot[m[1]] = m[2]
	}
	rows := map[string]string{}
	for _, ln := range strings.Split(data, "\n") {
		if f := strings.Split(ln, "|"); len(f) == 4 && strings.Contains(f[2], "[^") {
			rows[strings.TrimSpace(f[1])] = strings.TrimSpace(f[2])
		}
	}
	want := map[string][]string{
		"Acme X1": {"1299 [^", "$1,299"},
		"Bolt B2": {"1078.92 (999 EUR × 1.08) [^", "€999", "1.08 USD"},
	}
	if len(rows) != len(want) {
		t.Errorf("table rows %q, want only Acme X1 and Bolt B2 (the fabricated discount price dropped)", rows)
	}
	for row, w := range want {
		cell := rows[row]
		if !strings.HasPrefix(cell, w[0]) {
			t.Errorf("%s: cell %q, want %q…", row, cell, w[0])
		}
		var quotes string
		for _, m := range regexp.MustCompile(`\[\^(\d+)\]`).FindAllStringSubmatch(cell, -1) {
			quotes += foot[m[1]] + "\n"
		}
		for _, q := range w[1:] {
			if !strings.Contains(quotes, q) {
				t.Errorf("%s: its footnotes %q do not quote %q", row, quotes, q)
			}
		}
	}
	if strings.Contains(rep, "1149") || strings.Contains(rep, "discount") {
		t.Errorf("the fabricated value reached the report:\n%s", rep)
	}
	if !strings.Contains(rep, "1 value(s) proposed for the data table were left out") {
		t.Errorf("the left-out value is not told:\n%s", rep)
	}
	if len(res.Charts) != 1 || res.Charts[0].Name != "chart-1.png" || !strings.Contains(rep, "](chart-1.png)") {
		t.Fatalf("charts %d, report:\n%s", len(res.Charts), rep)
	}
	if _, err := png.Decode(bytes.NewReader(res.Charts[0].PNG)); err != nil {
		t.Errorf("chart: %v", err)
	}
	if got := e.brain.Count("analyst"); got != 1 {
		t.Errorf("analyst calls %d", got)
	}
}

// TestNoTableWithoutNumbers: evidence without numbers to compare costs no
// model call and adds no section.
func TestNoTableWithoutNumbers(t *testing.T) {
	e := newEnv(t)
	e.brain.Table = priceTable
	res := e.start("words", agent.Request{Question: "How do SMEs fare under the AI Act's sandboxes?", Language: "en", NoClarify: true, Depth: agent.DepthQuick})
	if strings.Contains(res.Report, "## Data") || len(res.Charts) != 0 {
		t.Errorf("a table from no numbers:\n%s", res.Report)
	}
}
