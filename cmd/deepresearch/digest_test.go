package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"deepresearch/bot"
	"deepresearch/bot/slackfake"
	"deepresearch/storage"
)

// The digest scheduler wired into serve, through the real Socket Mode path:
// `/research schedule` opens the modal; a custom cron with a bad minute is
// refused in the ack (the modal stays open, the error names the minute
// field) and stores nothing; a valid weekly schedule is stored and
// confirmed privately; `/research schedules` lists it with its buttons (and
// the App Home shows it); "Run now" posts a digest summary with the full
// report as a .md file in its thread, pinging no one; a second "Run now" in
// the same minute posts nothing more; someone else's Delete is refused
// privately and the schedule stays.
func TestServeDigest(t *testing.T) {
	fake := slackfake.New()
	defer fake.Close()
	fake.AddUser(slackfake.User{ID: "U1", Name: "alice", RealName: "Alice Owner", TZ: "Asia/Tokyo"})
	fake.AddUser(slackfake.User{ID: "U2", Name: "bob", RealName: "Bob Other", TZ: "Europe/London"})
	vars := serveEnv(t, fake, map[string]string{"DEEPRESEARCH_HTTP_ADDR": "off", "DEEPRESEARCH_DIGEST_TICK": "200ms"})
	srv := startServe(t, fake, vars, 120*time.Second)
	ctx, waitFor, ack := srv.ctx, srv.waitFor, srv.acked
	ephemeralsTo := func(user, source string) []slackfake.Ephemeral {
		var out []slackfake.Ephemeral
		for _, e := range fake.Ephemerals() {
			if e.User == user && (source == "" || e.Source == source) {
				out = append(out, e)
			}
		}
		return out
	}
	srv.connected(1)

	// /research schedule <topic> opens the modal, prefilled.
	const topic = "EU AI Act obligations <!here> @channel"
	ack(fake.SendSlashCommand(ctx, slackfake.SlashCommand{Command: "/research", Text: "schedule " + topic, User: "U1", Channel: "C1"}))
	var modal slackfake.View
	waitFor("the schedule modal", func() bool {
		for _, v := range fake.Views() {
			if v.Type == "modal" && v.CallbackID == bot.SchedCallbackCreate {
				modal = v
				return true
			}
		}
		return false
	})
	for _, want := range []string{bot.SchedBlockTopic, bot.SchedBlockChannel, bot.SchedBlockFreq, bot.SchedBlockCron, bot.SchedBlockTZ, `"Asia/Tokyo"`, "EU AI Act obligations"} {
		if !strings.Contains(string(modal.JSON), want) {
			t.Errorf("modal lacks %s: %s", want, modal.JSON)
		}
	}
	values := func(freq, cron string) map[string]map[string]slackfake.InputValue {
		return map[string]map[string]slackfake.InputValue{
			bot.SchedBlockTopic:    {"value": {Value: topic}},
			bot.SchedBlockChannel:  {"value": {Type: "conversations_select", Channel: "C1"}},
			bot.SchedBlockFreq:     {"value": {Type: "static_select", SelectedOption: freq}},
			bot.SchedBlockCron:     {"value": {Value: cron}},
			bot.SchedBlockTZ:       {"value": {Value: "Asia/Tokyo"}},
			bot.SchedBlockDepth:    {"value": {Type: "static_select", SelectedOption: "standard"}},
			bot.SchedBlockApproval: {"value": {Type: "static_select", SelectedOption: "no"}},
			bot.SchedBlockLanguage: {"value": {Value: ""}},
		}
	}

	// An invalid custom cron: the ack carries the error on the cron field.
	bad := ack(fake.SendViewSubmission(ctx, slackfake.ViewSubmission{User: "U1", ViewID: modal.ID, Values: values("custom", "61 * * * *")}))
	var resp struct {
		ResponseAction string            `json:"response_action"`
		Errors         map[string]string `json:"errors"`
	}
	if err := json.Unmarshal(bad.Payload, &resp); err != nil {
		t.Fatalf("ack payload %s: %v", bad.Payload, err)
	}
	if resp.ResponseAction != "errors" || !strings.Contains(resp.Errors[bot.SchedBlockCron], "minute field") || !strings.Contains(resp.Errors[bot.SchedBlockCron], "61") {
		t.Fatalf("ack of the invalid submission = %s", bad.Payload)
	}
	if len(resp.Errors) != 1 {
		t.Errorf("errors on other fields too: %v", resp.Errors)
	}

	// A valid weekly schedule: the ack closes the modal, the user is told.
	good := ack(fake.SendViewSubmission(ctx, slackfake.ViewSubmission{User: "U1", ViewID: modal.ID, Values: values("0 9 * * 1", "")}))
	if p := strings.TrimSpace(string(good.Payload)); p != "" && p != "null" && p != "{}" {
		t.Errorf("ack of the valid submission carries %s", good.Payload)
	}
	waitFor("the confirmation", func() bool {
		for _, e := range ephemeralsTo("U1", "chat.postEphemeral") {
			if strings.HasPrefix(e.Text, "Scheduled ") {
				return true
			}
		}
		return false
	})
	for _, e := range fake.Ephemerals() {
		if strings.Contains(e.Text, "could not schedule") {
			t.Errorf("the invalid submission was also reported as an ephemeral: %q", e.Text)
		}
	}

	// /research schedules lists exactly that one schedule, with its buttons.
	ack(fake.SendSlashCommand(ctx, slackfake.SlashCommand{Command: "/research", Text: "schedules", User: "U1", Channel: "C1"}))
	var list slackfake.Ephemeral
	waitFor("the schedule list", func() bool {
		for _, e := range ephemeralsTo("U1", "chat.postEphemeral") {
			if strings.Contains(string(e.Blocks), bot.SchedActionRunNow) {
				list = e
				return true
			}
		}
		return false
	})
	runBlock, schedID := blockButton(list.Blocks, bot.SchedActionRunNow)
	delBlock, delID := blockButton(list.Blocks, bot.SchedActionDelete)
	if schedID == "" || delID != schedID || runBlock != "sched_actions_"+schedID || delBlock != runBlock {
		t.Fatalf("list buttons: run %q/%q delete %q/%q\n%s", runBlock, schedID, delBlock, delID, list.Blocks)
	}
	if _, pause := blockButton(list.Blocks, bot.SchedActionPause); pause != schedID {
		t.Errorf("no Pause button for the schedule: %s", list.Blocks)
	}
	if n := strings.Count(string(list.Blocks), `"action_id":"`+bot.SchedActionRunNow+`"`); n != 1 {
		t.Errorf("%d schedules listed, want 1 (the invalid submission must not be stored): %s", n, list.Blocks)
	}
	for _, want := range []string{"0 9 * * 1", "Asia/Tokyo", "&lt;!here&gt;"} {
		if !strings.Contains(blocksText(list.Blocks), want) {
			t.Errorf("list lacks %q: %s", want, list.Blocks)
		}
	}

	// The App Home shows it too.
	ack(fake.SendAppHomeOpened(ctx, "U1", "home"))
	waitFor("the App Home section", func() bool {
		v, ok := fake.HomeView("U1")
		return ok && strings.Contains(string(v.JSON), "Your scheduled digests") && strings.Contains(string(v.JSON), schedID)
	})

	// Run now. Stay clear of a minute boundary so that the second click
	// below falls in the same minute as this one.
	if rest := time.Minute - time.Duration(time.Now().Second())*time.Second; rest < 20*time.Second {
		time.Sleep(rest + time.Second)
	}
	firstMinute := time.Now().Truncate(time.Minute)
	click := func(user, action, value string) slackfake.Sent {
		t.Helper()
		s, err := fake.SendBlockAction(ctx, slackfake.BlockAction{User: user, Channel: "C1", MessageTS: list.TS, IsEphemeral: true,
			ActionID: action, BlockID: runBlock, Value: value})
		ack(s, err)
		return s
	}
	// answered waits for a response_url answer to U1 whose blocks have s.
	answered := func(what, s string) {
		t.Helper()
		waitFor(what, func() bool {
			for _, e := range ephemeralsTo("U1", "response_url") {
				if strings.Contains(string(e.Blocks), s) {
					return true
				}
			}
			return false
		})
	}
	click("U1", bot.SchedActionRunNow, schedID)
	answered("the Run now answer", "Running it now")
	digests := func() []slackfake.Message {
		var out []slackfake.Message
		for _, m := range fake.BotMessages("C1") {
			if m.ThreadTS == "" && strings.Contains(string(m.Blocks), "Scheduled digest") {
				out = append(out, m)
			}
		}
		return out
	}
	var digest slackfake.Message
	var report slackfake.File
	waitFor("the digest and its report", func() (ok bool) {
		d := digests()
		if len(d) == 0 {
			return false
		}
		digest = d[0]
		report, ok = threadFile(fake, "C1", digest.TS)
		return ok
	})
	for _, want := range []string{"📰", "run by hand", "First digest:"} {
		if !strings.Contains(string(digest.Blocks), want) {
			t.Errorf("digest lacks %q: %s", want, digest.Blocks)
		}
	}
	if !strings.HasSuffix(report.Name, ".md") || !strings.HasPrefix(report.Name, "digest-") {
		t.Errorf("report file name %q", report.Name)
	}
	for _, want := range []string{"digest of", "Scheduled research:", "## Findings", "entered into force"} {
		if !strings.Contains(string(report.Content), want) {
			t.Errorf("report lacks %q:\n%s", want, report.Content)
		}
	}

	// A second Run now in the same minute starts nothing.
	click("U1", bot.SchedActionRunNow, schedID)
	answered("the second Run now answer", "already running")
	if m := time.Now().Truncate(time.Minute); !m.Equal(firstMinute) {
		t.Fatalf("the clicks straddled a minute (%s, %s); the test cannot check the dedup", firstMinute, m)
	}

	// Someone else's Delete is refused privately; the schedule stays.
	before := len(ephemeralsTo("U2", ""))
	click("U2", bot.SchedActionDelete, schedID)
	var refusal slackfake.Ephemeral
	waitFor("the refusal", func() bool {
		e := ephemeralsTo("U2", "")
		if len(e) > before {
			refusal = e[len(e)-1]
			return true
		}
		return false
	})
	if refusal.Channel != "C1" || !strings.Contains(refusal.Text, "Only alice") || !strings.Contains(refusal.Text, "can change this schedule") {
		t.Errorf("refusal = %+v", refusal)
	}
	ack(fake.SendSlashCommand(ctx, slackfake.SlashCommand{Command: "/research", Text: "schedules", User: "U1", Channel: "C1"}))
	waitFor("the list after the refused delete", func() bool {
		e := ephemeralsTo("U1", "chat.postEphemeral")
		return len(e) > 0 && e[len(e)-1].TS != list.TS && strings.Contains(string(e[len(e)-1].Blocks), schedID)
	})

	// Give a wrongly started second run time to show, then check.
	time.Sleep(2 * time.Second)
	if d := digests(); len(d) != 1 {
		t.Errorf("%d digests posted, want 1", len(d))
	}
	var reports int
	for _, f := range fake.Files() {
		if strings.HasPrefix(f.Name, "digest-") {
			reports++
		}
	}
	if reports != 1 {
		t.Errorf("%d digest reports uploaded, want 1", reports)
	}
	if p := fake.Pings(); len(p) > 0 {
		t.Errorf("the bot pinged: %+v", p)
	}

	srv.exitClean()
	log := srv.stderr.String()
	for _, bad := range []string{fake.BotToken(), "run failed", "extension interaction", `"level":"ERROR"`} {
		if strings.Contains(log, bad) {
			t.Errorf("log has %q:\n%s", bad, log)
		}
	}
}

// blockButton finds the button with actionID in blocks and returns its
// block_id and value.
func blockButton(blocks json.RawMessage, actionID string) (blockID, value string) {
	var bs []struct {
		BlockID  string `json:"block_id"`
		Elements []struct {
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		} `json:"elements"`
	}
	if json.Unmarshal(blocks, &bs) != nil {
		return "", ""
	}
	for _, b := range bs {
		for _, e := range b.Elements {
			if e.ActionID == actionID {
				return b.BlockID, e.Value
			}
		}
	}
	return "", ""
}

// blocksText is the text of blocks' JSON with its strings unescaped.
func blocksText(blocks json.RawMessage) string {
	var v any
	if json.Unmarshal(blocks, &v) != nil {
		return string(blocks)
	}
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			b.WriteString(v + "\n")
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return b.String()
}

// Stopping serve while a digest is being researched hands the firing back
// (its lease ends at once, so another process takes it over at its next
// tick) before the database is closed.
func TestServeDigestShutdownHandsBack(t *testing.T) {
	fake := slackfake.New()
	defer fake.Close()
	vars := serveEnv(t, fake, map[string]string{"DEEPRESEARCH_HTTP_ADDR": "off"})
	// The LLM answers until armed; then every call hangs until its client gives up.
	target, err := url.Parse(vars["OPENAI_BASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var armed atomic.Bool
	entered := make(chan struct{}, 100)
	release := make(chan struct{})
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if armed.Load() && r.Method == http.MethodPost {
			_, _ = io.Copy(io.Discard, r.Body) // so that the server notices the client going away
			entered <- struct{}{}
			select {
			case <-r.Context().Done():
			case <-release:
				t.Errorf("an LLM call outlived serve: %s", r.URL)
			}
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer llm.Close()
	defer close(release)
	vars["OPENAI_BASE_URL"] = llm.URL + target.Path
	srv := startServe(t, fake, vars, 60*time.Second)
	ctx, wait := srv.ctx, srv.waitFor
	srv.connected(1)
	if _, err := fake.SendSlashCommand(ctx, slackfake.SlashCommand{Command: "/research", Text: "schedule AI Act news", User: "U1", Channel: "C1"}); err != nil {
		t.Fatal(err)
	}
	var viewID string
	wait("the modal", func() bool {
		for _, v := range fake.Views() {
			if v.CallbackID == bot.SchedCallbackCreate {
				viewID = v.ID
				return true
			}
		}
		return false
	})
	if _, err := fake.SendViewSubmission(ctx, slackfake.ViewSubmission{User: "U1", ViewID: viewID, Values: map[string]map[string]slackfake.InputValue{
		bot.SchedBlockTopic:   {"value": {Value: "AI Act news"}},
		bot.SchedBlockChannel: {"value": {Type: "conversations_select", Channel: "C1"}},
		bot.SchedBlockFreq:    {"value": {Type: "static_select", SelectedOption: "0 9 * * 1"}},
		bot.SchedBlockTZ:      {"value": {Value: "UTC"}},
	}}); err != nil {
		t.Fatal(err)
	}
	wait("the confirmation", func() bool {
		for _, e := range fake.Ephemerals() {
			if strings.HasPrefix(e.Text, "Scheduled ") {
				return true
			}
		}
		return false
	})
	if _, err := fake.SendSlashCommand(ctx, slackfake.SlashCommand{Command: "/research", Text: "schedules", User: "U1", Channel: "C1"}); err != nil {
		t.Fatal(err)
	}
	var list slackfake.Ephemeral
	var schedID string
	wait("the list", func() bool {
		for _, e := range fake.Ephemerals() {
			if _, id := blockButton(e.Blocks, bot.SchedActionRunNow); id != "" {
				list, schedID = e, id
				return true
			}
		}
		return false
	})
	armed.Store(true)
	if _, err := fake.SendBlockAction(ctx, slackfake.BlockAction{User: "U1", Channel: "C1", MessageTS: list.TS, IsEphemeral: true,
		ActionID: bot.SchedActionRunNow, Value: schedID}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatalf("the digest never called the LLM\n%s", srv.stderr.String())
	}
	srv.exitClean()
	if log := srv.stderr.String(); strings.Contains(log, "database is closed") || strings.Contains(log, "hand back firing") {
		t.Errorf("the firing was not handed back:\n%s", log)
	}
	db, err := storage.Open(ctx, storage.Config{DataDir: vars["DEEPRESEARCH_DATA_DIR"]})
	if err != nil {
		t.Fatal(err)
	}
	firings, err := db.Schedules().ListFirings(ctx, schedID, 0)
	db.Close()
	if err != nil || len(firings) != 1 || firings[0].State != "running" || !firings[0].LeaseUntil.Before(time.Now()) {
		t.Fatalf("firings after shutdown = %+v, %v; want one running with its lease ended", firings, err)
	}

	// The next process takes the firing over at its first tick and posts the digest.
	armed.Store(false)
	vars["DEEPRESEARCH_DIGEST_TICK"] = "200ms"
	next := startServe(t, fake, vars, 60*time.Second)
	next.waitFor("the digest of the firing taken over", func() bool {
		for _, f := range fake.Files() {
			if f.Completed && strings.HasPrefix(f.Name, "digest-") {
				return true
			}
		}
		return false
	})
	next.exitClean()
	// The firing is a run of the digest kind: the next process's run
	// service picks it up.
	if log := next.stderr.String(); !strings.Contains(log, `"msg":"bot: picked up run"`) || !strings.Contains(log, `"run_id":"digest:`+schedID+`@`) {
		t.Errorf("log:\n%s", log)
	}
}
