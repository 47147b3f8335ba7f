package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"deepresearch/agent/llm/llmtest"
	"deepresearch/bot/slackfake"
)

// A finished report is a source for later questions where it was posted:
// a second question in the same channel cites the first report by the
// permalink of its thread, with a quote found in it; the same question in
// another channel, or in a DM, never sees it.
func TestServeCitesEarlierReportsOfTheChannel(t *testing.T) {
	w := newWorkspaceWorld(t)
	w.fake.AddChannel(slackfake.Channel{ID: "CSALES", Name: "sales"})
	vars, _ := newAskWorld(t, worldOpts{wrap: quotingReports("slack.com/archives/")})
	vars["SLACK_BOT_TOKEN"], vars["SLACK_APP_TOKEN"], vars["SLACK_API_URL"] = w.fake.BotToken(), w.fake.AppToken(), w.fake.APIURL()
	vars["DEEPRESEARCH_HTTP_ADDR"], vars["DEEPRESEARCH_APPROVE_DRAFT"] = "off", "false"
	// Without the workspace search: it would find the first question
	// itself, whose permalink is the thread's (and a run that read the
	// workspace is not kept as a source).
	vars["DEEPRESEARCH_SLACK_SEARCH"] = "false"
	srv := startServe(t, w.fake, vars, 120*time.Second)
	srv.connected(1)
	ask := func(channel, question string) (slackfake.Sent, string) {
		t.Helper()
		var sent slackfake.Sent
		var err error
		if strings.HasPrefix(channel, "D") {
			sent, err = w.fake.SendMessage(srv.ctx, slackfake.MessageEvent{User: asker, Channel: channel, Text: question})
		} else {
			sent, err = w.fake.SendAppMention(srv.ctx, slackfake.AppMention{User: asker, Channel: channel, Text: question})
		}
		srv.acked(sent, err)
		var report slackfake.File
		srv.waitFor("the report file in "+channel, func() (ok bool) {
			report, ok = threadFile(w.fake, channel, sent.TS)
			return ok
		})
		return sent, string(report.Content)
	}
	const question = "What is the timeline of the EU AI Act?"
	first, firstReport := ask("CBILLING", question)
	link := fmt.Sprintf("/archives/CBILLING/p%s", strings.ReplaceAll(first.TS, ".", ""))
	// citesFirst reports the footnotes of report that cite the first
	// report's thread, failing the test for a quote the first report
	// does not hold.
	citesFirst := func(report string) int {
		n := 0
		for _, d := range footnoteDefRE.FindAllStringSubmatch(report, -1) {
			if !strings.Contains(d[4], link) {
				continue
			}
			n++
			if !strings.Contains(firstReport, d[2]) {
				t.Errorf("footnote %s quotes %q, which the first report does not hold", d[1], d[2])
			}
		}
		return n
	}
	_, again := ask("CBILLING", "What did we find about the AI Act timeline?")
	if citesFirst(again) == 0 {
		t.Errorf("the second report in the channel does not cite the first one (%s):\n%s", link, again)
	}
	for _, elsewhere := range []string{"CSALES", "DALICE"} {
		_, other := ask(elsewhere, "What did we find about the AI Act timeline?")
		if citesFirst(other) != 0 || strings.Contains(other, link) {
			t.Errorf("the report in %s uses the report of CBILLING:\n%s", elsewhere, other)
		}
	}
	srv.exitClean()
}

// reportPageRE is a page in the prompt of a researcher's execute step.
var reportPageRE = regexp.MustCompile(`(?s)URL: (\S+)\n(.*?)(?:\n=== |\z)`)

// quotingReports makes the scripted model quote an earlier report, a page
// whose URL contains marker, by a line of its own words (it otherwise
// quotes a page's first sentence, which in a report is its headings).
func quotingReports(marker string) func(r *llmtest.Request, scripted llmtest.Reply) llmtest.Reply {
	return func(r *llmtest.Request, scripted llmtest.Reply) llmtest.Reply {
		if !strings.HasSuffix(r.Node(), ".execute") || !strings.Contains(r.LastUser(), marker) {
			return scripted
		}
		var fs []map[string]string
		for _, m := range reportPageRE.FindAllStringSubmatch(r.LastUser(), -1) {
			for _, line := range strings.Split(m[2], "\n") {
				line = strings.TrimSpace(line)
				if strings.HasSuffix(line, ".") && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "-") {
					fs = append(fs, map[string]string{"claim": line, "quote": line, "url": m[1]})
					break
				}
			}
		}
		return llmtest.JSON(map[string]any{"summary": "summary", "findings": fs})
	}
}

// A finished `ask` report is a source for later asks (private answers of
// the same person), cited as deepresearch://report/THREAD.
func TestAskCitesEarlierAskReports(t *testing.T) {
	vars, _ := newAskWorld(t, worldOpts{wrap: quotingReports("deepresearch://report/")})
	ctx := context.Background()
	var first, stderr bytes.Buffer
	if err := runAsk(ctx, []string{"-q", "What is the timeline of the EU AI Act?"}, getenv(vars), strings.NewReader(""), &first, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var second bytes.Buffer
	if err := runAsk(ctx, []string{"What did we find about the AI Act timeline?"}, getenv(vars), strings.NewReader(""), &second, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	thread := regexp.MustCompile(`thread (cli-\S+)`).FindStringSubmatch(stderr.String())
	if thread == nil {
		t.Fatalf("no thread id in the progress:\n%s", stderr.String())
	}
	cited := false
	for _, d := range footnoteDefRE.FindAllStringSubmatch(second.String(), -1) {
		if strings.HasPrefix(d[4], "deepresearch://report/cli-") {
			cited = true
			if d[4] == "deepresearch://report/"+thread[1] && !strings.Contains(first.String(), d[2]) {
				t.Errorf("footnote %s quotes %q, which the first report does not hold", d[1], d[2])
			}
		}
	}
	if !cited {
		t.Errorf("the second report does not cite the first:\n%s\n%s", second.String(), stderr.String())
	}
}
