package bot_test

import (
	"context"
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"deepresearch/bot"
	"deepresearch/bot/slackfake"
	"deepresearch/research"
	"deepresearch/schedule"
)

// The sources a hostile run read, and the links its model wrote: every
// way a markdown summary can make a link that opens an address no source
// supports, or shows another address than it opens.
const (
	linkSource      = "https://source.example/page"
	linkSpoofSource = "https://source.example/p/spoof-title"
)

var hostileLinks = []struct{ name, md string }{
	{"spoofed inline link", "[https://vendor.example/support](https://evil.example/phish)"},
	{"slack link syntax", "<https://evil.example/x|https://docs.vendor.example/guide>"},
	{"image", "![https://vendor.example/logo](https://evil.example/pixel.png)"},
	{"link with a title", `[docs](https://evil.example/t "Vendor docs")`},
	{"angle-bracket target", "[docs](<https://evil.example/angle>)"},
	{"javascript link", "[click me](javascript:alert(1))"},
	{"data link", "[open](data:text/html;base64,PHNjcmlwdD4=)"},
	{"bare address", "see https://evil.example/bare, or www.evil.example/www"},
	{"autolink", "<https://evil.example/auto>"},
	{"nested brackets", "[a [b] c](https://evil.example/nested)"},
	{"reference link", "[the docs][1]\n\n[1]: https://evil.example/ref"},
	{"inline code", "`https://evil.example/code`"},
	{"code block", "```\nhttps://evil.example/block\n```"},
	{"spoofed link to a source", "[https://accounts.google.com/signin](" + linkSource + ")"},
	{"host as text of a link to a source", "[accounts.google.com](" + linkSource + ")"},
	{"mentions", "<!channel> <!here> <@U0BOSS> <#C0SECRET>"},
	{"honest link to a source", "[the source](" + linkSource + ")"},
}

// hostileSummary is every hostile link, a paragraph each.
func hostileSummary() string {
	var parts []string
	for _, h := range hostileLinks {
		parts = append(parts, h.md)
	}
	return strings.Join(parts, "\n\n")
}

// linkResearcher finishes every run at once with result, after one
// progress step whose task card lists the pages read, one of them titled
// with another address than its own.
type linkResearcher struct{ result research.Result }

func (r linkResearcher) Start(_ context.Context, _ research.StartRequest, sink research.ProgressSink) (research.Outcome, error) {
	sink(research.Progress{Phase: "researching", SourcesRead: 2, Subtasks: []research.Subtask{{
		Title: "Read the vendor's pages", State: research.SubtaskDone, Searches: 1,
		Sources: []research.Source{
			{URL: linkSource, Title: "Vendor support"},
			{URL: linkSpoofSource, Title: "https://accounts.google.com/ServiceLogin?continue=https://mail.google.com"},
			{URL: "https://source.example/p/host-title", Title: "ACCOUNTS．GOOGLE．COM"},
			{URL: "https://docs.vendor.example/guide", Title: "vendor.example — guide"},
		},
	}}})
	res := r.result
	return research.Outcome{Result: &res}, nil
}

func (r linkResearcher) Resume(context.Context, string, string, research.Answer, research.ProgressSink) (research.Outcome, error) {
	res := r.result
	return research.Outcome{Result: &res}, nil
}

func (linkResearcher) Continue(context.Context, string, research.ProgressSink) (research.Outcome, error) {
	return research.Outcome{}, research.ErrNothingToContinue
}

func (linkResearcher) Cancel(context.Context, string) error { return nil }

// hostRE finds what reads as a host name in a link's text.
var hostRE = regexp.MustCompile(`(?i)[a-z0-9-]+(?:[.．。][a-z0-9-]+)*[.．。][a-z]{2,}`)

// checkLinks fails the test for every link Slack would show that opens no
// source read, or whose text shows another host than the one it opens.
func checkLinks(t *testing.T, fake *slackfake.Server, sources ...string) {
	t.Helper()
	hosts := map[string]bool{}
	for _, s := range sources {
		u, _ := url.Parse(s)
		hosts[u.Host] = true
	}
	n := 0
	for _, l := range fake.LiveLinks() {
		u, err := url.Parse(l.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || !hosts[u.Host] {
			t.Errorf("%s %s: a live link to %q (text %q) opens no source read", l.Where, l.TS, l.URL, l.Text)
			continue
		}
		n++
		for _, h := range hostRE.FindAllString(l.Text, -1) {
			h = strings.ToLower(strings.NewReplacer("．", ".", "。", ".").Replace(h))
			if h != u.Host && !strings.HasSuffix(u.Host, "."+h) {
				t.Errorf("%s %s: a link to %q shows %q (text %q)", l.Where, l.TS, l.URL, h, l.Text)
			}
		}
	}
	if n == 0 {
		t.Error("no link to a source at all: sources read should stay links")
	}
}

// TestSummaryLinksOnlyToSourcesRead: the report's summary is shown in
// Slack with the file share (files.completeUploadExternal), as a stream's
// final blocks (chat.stopStream), as a message of its own when Slack
// refuses the share's blocks, and an answer as a reply: in each, only the
// sources the run read are links, no link's text shows another address
// than it opens, and every other address the model wrote is inert text.
// Before, every link and bare address of the summary was live in Slack
// ("https://vendor.example/support (<https://evil.example/phish>)").
func TestSummaryLinksOnlyToSourcesRead(t *testing.T) {
	sources := []string{linkSource, linkSpoofSource, "https://source.example/p/host-title", "https://docs.vendor.example/guide"}
	result := research.Result{Title: "Vendor support", Summary: hostileSummary(), Report: "# Vendor support\n\nbody\n",
		Sources: 2, Links: sources}
	tests := []struct {
		name    string
		opts    []slackfake.Option
		prepare func(h *harness)
		reply   bool
	}{
		{name: "file share"},
		{name: "stream", opts: []slackfake.Option{slackfake.WithoutStreaming("")}},
		{name: "summary apart", prepare: func(h *harness) {
			h.fake.InjectFault("files.completeUploadExternal", slackfake.Fault{Error: "invalid_blocks", Times: 1})
		}},
		{name: "reply", reply: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.opts...)
			if tt.prepare != nil {
				tt.prepare(h)
			}
			res := result
			res.Reply = tt.reply
			h.startWith(linkResearcher{result: res}, func(o *bot.Options) { o.RunOptions = research.RunOptions{} })
			ctx := testCtx(t)
			h.connected(ctx, 1)
			sent := h.mention(ctx, "U1", "C1", "How do I reach the vendor's support?", "")
			h.waitState(ctx, "C1", sent.TS, research.StateDone)
			if !tt.reply && len(h.files("C1", sent.TS)) != 1 {
				t.Fatalf("%d report files", len(h.files("C1", sent.TS)))
			}
			checkLinks(t, h.fake, sources...)
			h.noPings()
		})
	}
}

// TestCardSourceTitleShowsRealHost: a task card's source shows the page's
// title as its link text; a title that is a URL or a host name of another
// site (a page titled "https://accounts.google.com/…") shows the host the
// link opens instead. Before, the card linked
// {"url":"…/p/spoof-title","text":"https://accounts.google.com/…"}.
func TestCardSourceTitleShowsRealHost(t *testing.T) {
	h := streaming(t)
	h.startWith(linkResearcher{result: research.Result{Title: "Vendor", Summary: "Done.", Report: "# Vendor\n"}},
		func(o *bot.Options) { o.RunOptions = research.RunOptions{} })
	ctx := testCtx(t)
	h.connected(ctx, 1)
	sent := h.mention(ctx, "U1", "C1", "How do I reach the vendor's support?", "")
	h.waitState(ctx, "C1", sent.TS, research.StateDone)
	sts := threadStreams(h, "C1", sent.TS)
	if len(sts) != 1 {
		t.Fatalf("%d streams", len(sts))
	}
	tasks := sts[0].Tasks()
	if len(tasks) != 1 {
		t.Fatalf("tasks = %+v", tasks)
	}
	want := map[string]string{
		linkSource:                            "Vendor support",
		linkSpoofSource:                       "source.example",
		"https://source.example/p/host-title": "source.example",
		"https://docs.vendor.example/guide":   "vendor.example — guide",
	}
	if len(tasks[0].Sources) != len(want) {
		t.Fatalf("sources = %+v", tasks[0].Sources)
	}
	for _, src := range tasks[0].Sources {
		if w, ok := want[src.URL]; !ok || src.Text != w {
			t.Errorf("source %q shows %q, want %q", src.URL, src.Text, w)
		}
	}
}

// TestDigestBlocksLinkOnlySources: a digest's message links its new
// sources and nothing else: a finding's address is inert, and a source
// titled with another site's URL shows the host it opens. Before, both
// were live ("https://accounts.google.com/signin — https://src.example/p").
func TestDigestBlocksLinkOnlySources(t *testing.T) {
	now := time.Date(2026, 3, 9, 9, 0, 0, 0, time.UTC)
	m := schedule.DigestMessage{ScheduleID: "s1", Topic: "Vendor news", Title: "Vendor news", Due: now,
		WhatsNew: schedule.WhatsNew{Since: now.Add(-7 * 24 * time.Hour),
			NewFindings: []string{"Support moved to https://evil.example/phish and www.evil.example"},
			NewSources: []research.Source{{URL: "https://src.example/p", Title: "https://accounts.google.com/signin"},
				{URL: "https://src.example/q", Title: "Vendor blog"}, {URL: "https://src.example/r"}}}}
	raw, err := json.Marshal(bot.DigestBlocks(m))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range slackfake.BlockLinks(raw) {
		got = append(got, l.URL+" "+l.Text)
	}
	want := []string{"https://src.example/p https://src.example/p", "https://src.example/q https://src.example/q", "https://src.example/r https://src.example/r"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("links = %q, want %q", got, want)
	}
	if !strings.Contains(string(raw), "src.example — https://src.example/p") || !strings.Contains(string(raw), "hxxps://evil[.]example/phish") {
		t.Errorf("blocks = %s", raw)
	}
}
