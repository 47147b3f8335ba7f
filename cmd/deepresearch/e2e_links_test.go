package main

import (
	"maps"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"deepresearch/agent/llm/llmtest"
	"deepresearch/bot/slackfake"
)

// readHostRE finds what reads as a host name in a link's text.
var readHostRE = regexp.MustCompile(`(?i)[a-z0-9-]+(?:[.．。][a-z0-9-]+)*[.．。][a-z]{2,}`)

// checkSourceLink fails unless l opens the web site the run read (the only
// source host of this world) and its text shows no other host.
func checkSourceLink(t *testing.T, where string, l slackfake.Link, site string) {
	t.Helper()
	u, err := url.Parse(l.URL)
	if err != nil || u.Scheme != "http" || u.Host != site {
		t.Errorf("%s: a live link to %q (text %q) opens no source read", where, l.URL, l.Text)
		return
	}
	for _, h := range readHostRE.FindAllString(l.Text, -1) {
		t.Errorf("%s: a link to %q shows %q (text %q)", where, l.URL, h, l.Text)
	}
}

// TestServeLinksOnlyToSourcesRead: a model that read a hostile page writes
// links to addresses no source supports, Slack mention syntax and a link
// whose text spoofs another address, into the report and its summary; one
// page read is titled with another site's URL. Through serve, the fake
// model, the web site and the fake Slack: the report file, the summary
// blocks, the stream's final blocks and its task cards link only the pages
// read, no link shows another address than it opens, and the hostile
// addresses are there as inert text.
func TestServeLinksOnlyToSourcesRead(t *testing.T) {
	pages := maps.Clone(askPages)
	pages["/spoof-title"] = [2]string{"https://accounts.google.com/ServiceLogin", "The vendor's support line is open from nine to five on weekdays."}
	sourceRE := regexp.MustCompile(`source: .*, (http://\S+)`)
	summary := "[https://vendor.example/support](https://evil.example/phish) <https://evil.example/x|https://docs.vendor.example> " +
		"![logo](https://evil.example/p.png) [click](javascript:alert(1)) see https://evil.example/bare <!channel>"
	body := "\n\n## Support\n\n- [Call us](data:text/html;base64,PHNjcmlwdD4=) or <a href=\"https://evil.example/a\">https://vendor.example</a>\n" +
		"- [docs][1] and <@U0BOSS>\n\n[1]: https://evil.example/ref\n"
	vars, _ := newAskWorld(t, worldOpts{pages: pages, wrap: func(r *llmtest.Request, scripted llmtest.Reply) llmtest.Reply {
		if r.Node() != "writer" {
			return scripted
		}
		spoof := ""
		if m := sourceRE.FindStringSubmatch(r.LastUser()); m != nil {
			spoof = " [https://accounts.google.com/signin](" + m[1] + ")"
		}
		scripted.Content = strings.Replace(scripted.Content, "The act is in force.", "The act is in force. "+summary+spoof, 1)
		scripted.Content = strings.Replace(scripted.Content, "\n## Detailed Analysis", body+"\n## Detailed Analysis", 1)
		return scripted
	}})
	fake := slackfake.New()
	t.Cleanup(fake.Close)
	vars["SLACK_BOT_TOKEN"], vars["SLACK_APP_TOKEN"], vars["SLACK_API_URL"] = fake.BotToken(), fake.AppToken(), fake.APIURL()
	vars["DEEPRESEARCH_HTTP_ADDR"], vars["DEEPRESEARCH_APPROVE_DRAFT"] = "off", "false"
	srv := startServe(t, fake, vars, 90*time.Second)
	srv.connected(1)
	sent, err := fake.SendAppMention(srv.ctx, slackfake.AppMention{User: "U1", Channel: "C1", Text: "How do I reach the vendor's support?"})
	srv.acked(sent, err)
	var report slackfake.File
	srv.waitFor("the report file", func() (ok bool) {
		report, ok = threadFile(fake, "C1", sent.TS)
		return ok
	})
	srv.waitFor("the stream stopped", func() bool {
		for _, st := range fake.Streams() {
			if st.ThreadTS == sent.TS && !st.Open {
				return true
			}
		}
		return false
	})
	srv.exitClean()

	site := ""
	for _, st := range fake.Streams() {
		for _, c := range st.Tasks() {
			for _, s := range c.Sources {
				if strings.HasSuffix(s.URL, "/spoof-title") {
					u, _ := url.Parse(s.URL)
					site = u.Host
				}
			}
		}
	}
	if site == "" {
		t.Fatal("the page titled with another site's URL is on no task card")
	}
	content := string(report.Content)
	if !strings.Contains(content, "hxxps://evil[.]example/phish") || !strings.Contains(string(report.Blocks), "hxxps://evil[.]example/phish") {
		t.Errorf("the hostile address is not kept as inert text:\n%s\n%s", content, report.Blocks)
	}
	for _, l := range slackfake.MarkdownLinks(content) {
		checkSourceLink(t, "report file", l, site)
	}
	for _, bad := range []string{"evil.example", "<!channel>", "<@U0BOSS>", "<a href", "](javascript:", "](data:"} {
		if strings.Contains(content, bad) {
			t.Errorf("the report file keeps %q:\n%s", bad, content)
		}
	}
	n := 0
	for _, l := range fake.LiveLinks() {
		checkSourceLink(t, l.Where+" "+l.TS, l, site)
		n++
	}
	if n == 0 {
		t.Error("Slack shows no link to a source read")
	}
	if p := fake.Pings(); len(p) > 0 {
		t.Errorf("pings: %+v", p)
	}
}
