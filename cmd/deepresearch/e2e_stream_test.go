package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"deepresearch/bot/slackfake"
	"deepresearch/research"
	"deepresearch/slackstate"
)

// The real serve against the fake Slack, the fake model and web: a mention
// gets one stream in its thread whose plan shows every subtask as a
// completed task card listing the pages it read, the report file, and,
// when the stream stops, the outcome with the feedback buttons; the run
// edits no message along the way but its draft approval (chat.update per
// run at most 2). In a workspace without streaming the same run shows an
// edited status message instead.
func TestServeStreamsThePlan(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		name := map[bool]string{true: "streaming", false: "no streaming"}[streaming]
		t.Run(name, func(t *testing.T) {
			var opts []slackfake.Option
			if !streaming {
				opts = append(opts, slackfake.WithoutStreaming("unknown_method"))
			}
			fake := slackfake.New(opts...)
			defer fake.Close()
			vars := serveEnv(t, fake, map[string]string{"DEEPRESEARCH_HTTP_ADDR": "off"})
			srv := startServe(t, fake, vars, 90*time.Second)
			srv.connected(1)
			sent, err := fake.SendAppMention(srv.ctx, slackfake.AppMention{User: "U1", Channel: "C1", Text: "What does the EU AI Act require?"})
			srv.acked(sent, err)

			var approval slackfake.Message
			srv.waitFor("the draft approval", func() bool {
				for _, m := range fake.Thread("C1", sent.TS) {
					if m.IsBot() && m.ButtonValue("dr_approve") != "" {
						approval = m
						return true
					}
				}
				return false
			})
			srv.acked(fake.SendBlockAction(srv.ctx, slackfake.BlockAction{User: "U1", Channel: "C1", MessageTS: approval.TS,
				ActionID: "dr_approve", Value: approval.ButtonValue("dr_approve")}))
			srv.waitFor("the report file", func() bool { _, ok := threadFile(fake, "C1", sent.TS); return ok })
			threadID := slackstate.ThreadKey{Team: fake.TeamID(), Channel: "C1", ThreadTS: sent.TS}.ThreadID()
			srv.waitFor("the run to be done", func() bool {
				r, err := latestRun(srv.ctx, vars, threadID)
				return err == nil && r.State == research.StateDone
			})

			var mine []slackfake.Stream
			srv.waitFor("the outcome", func() bool {
				mine = mine[:0]
				for _, st := range fake.Streams() {
					if st.Channel == "C1" && st.ThreadTS == sent.TS {
						mine = append(mine, st)
					}
				}
				if streaming {
					return len(mine) == 1 && !mine[0].Open
				}
				for _, m := range fake.Thread("C1", sent.TS) {
					if m.IsBot() && strings.HasPrefix(m.Text, "Done: ") {
						return true
					}
				}
				return false
			})
			updates := fake.Calls("chat.update")
			if !streaming {
				if len(mine) != 0 {
					t.Errorf("%d streams in a workspace without streaming", len(mine))
				}
				t.Logf("FIGURES without streaming: chat.update calls for the run %d", updates)
				srv.exitClean()
				return
			}
			st := mine[0]
			if st.DisplayMode != "plan" || st.RecipientUser != "U1" || st.RecipientTeam != fake.TeamID() {
				t.Errorf("stream mode %q to %q/%q; want plan, to the requester", st.DisplayMode, st.RecipientUser, st.RecipientTeam)
			}
			if st.PlanTitle() == "" {
				t.Error("the plan has no title")
			}
			// Nothing the stream showed goes backwards across the approval
			// (a resumed turn): not the plan's title, not a card.
			best := map[string]slackfake.TaskCard{}
			title := ""
			for _, raw := range st.Chunks {
				var c slackfake.TaskCard
				if json.Unmarshal(raw, &c) != nil {
					continue
				}
				switch c.Type {
				case "plan_update":
					if title == st.PlanTitle() && c.Title != title {
						t.Errorf("the plan's title went from the theme %q back to %q", title, c.Title)
					}
					title = c.Title
				case "task_update":
					if b, ok := best[c.ID]; ok && b.Status == "complete" && (c.Status != "complete" || len(c.Sources) < len(b.Sources)) {
						t.Errorf("card %q went back from complete with %d sources to %s with %d: %s", c.Title, len(b.Sources), c.Status, len(c.Sources), raw)
					}
					best[c.ID] = c
				}
			}
			cards := st.Tasks()
			if len(cards) < 2 {
				t.Fatalf("%d task cards; the scripted plan has 2 subtasks", len(cards))
			}
			for _, c := range cards {
				if c.Status != "complete" || len(c.Sources) == 0 || !strings.Contains(c.Details, "read") {
					t.Errorf("card %q: status %s, details %q, %d sources; want complete, with the pages read", c.Title, c.Status, c.Details, len(c.Sources))
				}
				for _, s := range c.Sources {
					if s.Text == "" || !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
						t.Errorf("card %q: source %+v", c.Title, s)
					}
				}
			}
			final := string(st.FinalBlocks)
			if !strings.Contains(final, "Done") || !strings.Contains(final, `"feedback_buttons"`) {
				t.Errorf("the stream's final blocks lack the outcome or the feedback buttons: %s", final)
			}
			if updates > 2 {
				t.Errorf("chat.update called %d times for one run; want at most 2", updates)
			}
			t.Logf("FIGURES streaming: chat.update calls for the run %d, chat.appendStream %d, task cards %d", updates, fake.Calls("chat.appendStream"), len(cards))
			srv.exitClean()
		})
	}
}
