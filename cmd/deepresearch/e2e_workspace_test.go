package main

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"deepresearch/agent/llm/llmtest"
	"deepresearch/bot/slackfake"
)

// The workspace a "what did we decide" question is asked in: a public
// channel, a private channel the asker is in, and one they are not in,
// each with a message about the decision (posted before the question).
type workspaceWorld struct {
	fake                    *slackfake.Server
	public, mine, forbidden slackfake.Message
}

const asker = "UALICE"

func newWorkspaceWorld(t *testing.T) workspaceWorld {
	t.Helper()
	fake := slackfake.New()
	t.Cleanup(fake.Close)
	fake.AddUser(slackfake.User{ID: asker, Name: "alice"})
	fake.AddUser(slackfake.User{ID: "UBOB", Name: "bob"})
	fake.AddChannel(slackfake.Channel{ID: "CBILLING", Name: "billing"})
	fake.AddChannel(slackfake.Channel{ID: "GPLANNING", Name: "planning", IsPrivate: true, Members: []string{asker, "UBOB"}})
	fake.AddChannel(slackfake.Channel{ID: "GBOARD", Name: "board", IsPrivate: true, Members: []string{"UBOB"}})
	fake.AddChannel(slackfake.Channel{ID: "DALICE", IsIM: true, User: asker})
	w := workspaceWorld{fake: fake}
	w.public = fake.AddMessage(slackfake.Message{Channel: "CBILLING", User: "UBOB", TS: "1600000000.000100",
		Text: "We decided to ship the billing rewrite in March, once the load test passes."})
	w.mine = fake.AddMessage(slackfake.Message{Channel: "GPLANNING", User: "UBOB", TS: "1600000100.000100",
		Text: "Planning note: the billing rewrite keeps old invoices read-only until June, as decided."})
	w.forbidden = fake.AddMessage(slackfake.Message{Channel: "GBOARD", User: "UBOB", TS: "1600000200.000100",
		Text: "Board only: we decided to cancel the billing rewrite and sell the team."})
	return w
}

var permalinkRE = regexp.MustCompile(`https://[a-z0-9-]+\.slack\.com/archives/([A-Z0-9]+)/p(\d+)\S*`)

// workspaceCitations returns, by channel, the quotes of a report's
// footnotes that cite a Slack message.
func workspaceCitations(t *testing.T, report string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, d := range footnoteDefRE.FindAllStringSubmatch(report, -1) {
		m := permalinkRE.FindStringSubmatch(d[4])
		if m == nil {
			continue
		}
		if _, err := url.Parse(d[4]); err != nil {
			t.Errorf("footnote %s: bad permalink %q", d[1], d[4])
		}
		out[m[1]] = append(out[m[1]], d[2])
	}
	return out
}

// A question about the team's own decision searches the messages the asker
// can see (Slack's Real-time Search API with the action_token of their
// message) and cites them by permalink, each quote in its message; a
// private channel the asker is not in is never cited. In a DM the asker's
// own private channels count; in a channel only public ones do, since the
// report is seen by the channel. DEEPRESEARCH_SLACK_SEARCH=false turns it
// off.
func TestServeCitesTheWorkspaceTheAskerCanSee(t *testing.T) {
	const question = "What did we decide about the billing rewrite?"
	tests := []struct {
		name     string
		dm       bool
		off      bool
		want     []string // channels cited
		notCited []string
	}{
		{name: "direct message", dm: true, want: []string{"CBILLING", "GPLANNING"}, notCited: []string{"GBOARD"}},
		{name: "channel mention", want: []string{"CBILLING"}, notCited: []string{"GPLANNING", "GBOARD"}},
		{name: "turned off", dm: true, off: true, notCited: []string{"CBILLING", "GPLANNING", "GBOARD"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorkspaceWorld(t)
			env := map[string]string{"DEEPRESEARCH_HTTP_ADDR": "off", "DEEPRESEARCH_APPROVE_DRAFT": "false"}
			if tc.off {
				env["DEEPRESEARCH_SLACK_SEARCH"] = "false"
			}
			// The model plans the question's own queries (the web knows
			// nothing of the team's billing rewrite).
			vars, _ := newAskWorld(t, worldOpts{wrap: func(r *llmtest.Request, scripted llmtest.Reply) llmtest.Reply {
				if r.Node() != "planner" {
					return scripted
				}
				return llmtest.JSON(map[string]any{"theme": "The billing rewrite", "investigation_points": []string{"The decision"},
					"search_queries": []string{"billing rewrite decided"},
					"subtasks":       []map[string]any{{"title": "The decision", "queries": []string{"billing rewrite decided"}}},
					"plan_text":      "One point.", "evaluation_types": []string{"attribution"}})
			}})
			vars["SLACK_BOT_TOKEN"], vars["SLACK_APP_TOKEN"], vars["SLACK_API_URL"] = w.fake.BotToken(), w.fake.AppToken(), w.fake.APIURL()
			for k, v := range env {
				vars[k] = v
			}
			srv := startServe(t, w.fake, vars, 90*time.Second)
			srv.connected(1)
			channel := "CBILLING"
			var sent slackfake.Sent
			var err error
			if tc.dm {
				channel = "DALICE"
				sent, err = w.fake.SendMessage(srv.ctx, slackfake.MessageEvent{User: asker, Channel: channel, Text: question})
			} else {
				sent, err = w.fake.SendAppMention(srv.ctx, slackfake.AppMention{User: asker, Channel: channel, Text: question})
			}
			srv.acked(sent, err)
			var report slackfake.File
			srv.waitFor("the report file", func() (ok bool) {
				report, ok = threadFile(w.fake, channel, sent.TS)
				return ok
			})
			content := string(report.Content)
			cited := workspaceCitations(t, content)
			texts := map[string]string{"CBILLING": w.public.Text, "GPLANNING": w.mine.Text, "GBOARD": w.forbidden.Text}
			for _, ch := range tc.want {
				if len(cited[ch]) == 0 {
					t.Errorf("no citation of the message in %s:\n%s", ch, content)
				}
			}
			for ch, quotes := range cited {
				for _, q := range quotes {
					if !strings.Contains(texts[ch], q) {
						t.Errorf("the citation of %s quotes %q, which is not in the message %q", ch, q, texts[ch])
					}
				}
			}
			for _, ch := range tc.notCited {
				if len(cited[ch]) > 0 || strings.Contains(content, ch) {
					t.Errorf("the report cites %s, which it must not:\n%s", ch, content)
				}
			}
			if strings.Contains(content, "sell the team") {
				t.Errorf("the report quotes the private channel the asker is not in:\n%s", content)
			}
			if got := w.fake.Calls("assistant.search.context"); tc.off != (got == 0) {
				t.Errorf("assistant.search.context called %d times (search off: %t)", got, tc.off)
			}
			srv.exitClean()
			if log := srv.stderr.String(); strings.Contains(log, w.fake.BotToken()) {
				t.Errorf("the log shows the bot token:\n%s", log)
			}
		})
	}
}
