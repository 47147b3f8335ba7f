package mcpsource

import (
	"strings"
	"testing"
)

func TestParseConfig(t *testing.T) {
	t.Setenv("WIKI_TOKEN", "tok-123")
	cfg, err := ParseConfig([]byte(`{"mcpServers": {
		"docs": {"command": "npx", "args": ["-y", "some-server", "/srv/docs"], "env": {"LOG": "quiet"}},
		"wiki": {"url": "https://wiki.example/mcp", "headers": {"Authorization": "Bearer ${WIKI_TOKEN}"},
		         "deepresearch": {"tools": ["search"], "visibility": "channels", "channels": ["C1"]}}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	if d := cfg["docs"]; d.Command != "npx" || len(d.Args) != 3 || d.Deepresearch.Visibility != VisibilityPrivate {
		t.Errorf("docs = %+v (visibility defaults to private)", d)
	}
	if w := cfg["wiki"]; w.Headers["Authorization"] != "Bearer tok-123" || w.Deepresearch.Channels[0] != "C1" {
		t.Errorf("wiki = %+v", w)
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"not json", `{`, "config"},
		{"both transports", `{"mcpServers": {"a": {"command": "x", "url": "https://a"}}}`, "either command"},
		{"neither", `{"mcpServers": {"a": {}}}`, "either command"},
		{"bad url", `{"mcpServers": {"a": {"url": "ftp://a"}}}`, "http"},
		{"bad name", `{"mcpServers": {"a b": {"command": "x"}}}`, "names are"},
		{"bad visibility", `{"mcpServers": {"a": {"command": "x", "deepresearch": {"visibility": "public"}}}}`, "not any"},
		{"channels without list", `{"mcpServers": {"a": {"command": "x", "deepresearch": {"visibility": "channels"}}}}`, "needs channels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
