package agent

import (
	"encoding/json"
	"testing"
)

// TestLLMToolsKeepPublishedSchema: an external tool's schema reaches the
// model with the keywords the client represents, as published.
func TestLLMToolsKeepPublishedSchema(t *testing.T) {
	published := `{"type":"object","properties":{"path":{"type":"string","description":"file to read"},` +
		`"head":{"type":["number","null"],"minimum":1},"tags":{"type":"array","items":{"type":"string","enum":["a","b"]},"maxItems":3}},` +
		`"required":["path"],"additionalProperties":false}`
	tools := llmTools([]ExternalTool{{Name: "mcp_docs__read", Source: "docs", Description: "Read a file.", Schema: json.RawMessage(published)},
		{Name: "mcp_docs__list", Source: "docs"}, {Name: "mcp_docs__ping", Source: "docs", Schema: json.RawMessage(`{"properties":{}}`)}})
	if len(tools) != 3 || tools[0].Strict || tools[1].Parameters != nil {
		t.Fatalf("tools %+v", tools)
	}
	if p := tools[2].Parameters; p == nil || len(p.Type) != 1 || p.Type[0] != "object" {
		t.Errorf("a schema without a type is sent as %+v, want an object", p)
	}
	got, err := json.Marshal(tools[0].Parameters)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	_ = json.Unmarshal([]byte(published), &a)
	_ = json.Unmarshal(got, &b)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("schema sent\n%s\nwant\n%s", jb, ja)
	}
}
