package bot

import (
	"encoding/json"
	"strings"
	"testing"

	"deepresearch/bot/slackfake"
	"deepresearch/research"
)

func TestCardSourceText(t *testing.T) {
	for _, tc := range []struct{ title, url, want string }{
		{"Vendor support", "https://vendor.example/support", "Vendor support"},
		{"", "https://vendor.example/support", "https://vendor.example/support"},
		{"https://accounts.google.com/ServiceLogin", "https://evil.example/p/spoof-title", "evil.example"},
		{"accounts.google.com", "https://EVIL.example:8443/p", "evil.example"},
		{"apple.com", "https://аррӏе.com/login", "xn--80ak6aa92e.com"},
		{"vendor.example — docs", "https://docs.vendor.example/", "vendor.example — docs"},
		{"<https://evil.example|x>", "https://good.example/", "good.example"},
	} {
		if got := cardSourceText(tc.title, tc.url); got != tc.want {
			t.Errorf("cardSourceText(%q, %q) = %q, want %q", tc.title, tc.url, got, tc.want)
		}
	}
}

// TestStatusShowsNoLinks: a status message shows the plan, the subtasks
// and the note (the model's and the web's words) with no live address.
// Before, "Read https://evil.example/guide" was linked by Slack.
func TestStatusShowsNoLinks(t *testing.T) {
	evil := "[https://vendor.example](https://evil.example/x) https://evil.example/guide <https://evil.example/a|docs> www.evil.example"
	v := statusView{Question: "How do I reach support?", State: research.StateRunning, RunID: "r1",
		Progress: research.Progress{Plan: []string{"Read " + evil}, Note: "reading " + evil,
			Subtasks: []research.Subtask{{Title: "Check " + evil, State: research.SubtaskRunning}}}}
	_, blocks := statusBlocks(v)
	raw, err := json.Marshal(blocks)
	if err != nil {
		t.Fatal(err)
	}
	if ls := slackfake.BlockLinks(raw); len(ls) > 0 {
		t.Errorf("the status message links %+v", ls)
	}
	if !strings.Contains(string(raw), "hxxps://evil[.]example/guide") {
		t.Errorf("the address is not shown as inert text: %s", raw)
	}
}
