package llmtest

import (
	"encoding/json"
	"net/http"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// Request is one recorded chat completion request. The decoded body is
// embedded, so req.Model, req.Messages, req.Tools... read directly.
type Request struct {
	openai.ChatCompletionRequest
	Call       int         // 1-based arrival order among chat requests
	Path       string      // URL path as received
	Query      string      // raw query (Azure api-version)
	Deployment string      // Azure deployment name from the path, if any
	Header     http.Header // request headers
	Body       []byte      // raw body
}

// Role is the agent role sent by the deepresearch client (X-Deepresearch-Role).
func (r *Request) Role() string { return r.Header.Get("X-Deepresearch-Role") }

// Node is the graph node sent by the deepresearch client (X-Deepresearch-Node).
func (r *Request) Node() string { return r.Header.Get("X-Deepresearch-Node") }

// System returns the system and developer messages joined by newlines.
func (r *Request) System() string {
	var parts []string
	for _, m := range r.Messages {
		if m.Role == openai.ChatMessageRoleSystem || m.Role == openai.ChatMessageRoleDeveloper {
			parts = append(parts, messageText(m))
		}
	}
	return strings.Join(parts, "\n")
}

// LastUser returns the last user message.
func (r *Request) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == openai.ChatMessageRoleUser {
			return messageText(r.Messages[i])
		}
	}
	return ""
}

// Text returns every message's text joined by newlines.
func (r *Request) Text() string {
	parts := make([]string, 0, len(r.Messages))
	for _, m := range r.Messages {
		parts = append(parts, messageText(m))
	}
	return strings.Join(parts, "\n")
}

// FormatType returns response_format.type ("", "text", "json_object",
// "json_schema").
func (r *Request) FormatType() string {
	if r.ResponseFormat == nil {
		return ""
	}
	return string(r.ResponseFormat.Type)
}

// SchemaName returns response_format.json_schema.name, or "".
func (r *Request) SchemaName() string {
	if r.ResponseFormat == nil || r.ResponseFormat.JSONSchema == nil {
		return ""
	}
	return r.ResponseFormat.JSONSchema.Name
}

// Schema returns the raw response_format.json_schema.schema, or nil.
func (r *Request) Schema() json.RawMessage {
	if r.ResponseFormat == nil || r.ResponseFormat.JSONSchema == nil || r.ResponseFormat.JSONSchema.Schema == nil {
		return nil
	}
	b, err := r.ResponseFormat.JSONSchema.Schema.MarshalJSON()
	if err != nil {
		return nil
	}
	return b
}

// ToolNames lists the function tools offered.
func (r *Request) ToolNames() []string {
	var out []string
	for _, t := range r.Tools {
		if t.Function != nil {
			out = append(out, t.Function.Name)
		}
	}
	return out
}

// ToolResults returns the tool messages (tool_call_id → content).
func (r *Request) ToolResults() map[string]string {
	out := map[string]string{}
	for _, m := range r.Messages {
		if m.Role == openai.ChatMessageRoleTool {
			out[m.ToolCallID] = messageText(m)
		}
	}
	return out
}

func messageText(m openai.ChatCompletionMessage) string {
	if m.Content != "" || len(m.MultiContent) == 0 {
		return m.Content
	}
	var parts []string
	for _, p := range m.MultiContent {
		if p.Text != "" {
			parts = append(parts, p.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Match selects requests for a rule. Every non-empty field must match;
// string fields match substrings (Role, Node, Model and Schema match
// exactly).
type Match struct {
	System string // substring of the system/developer messages
	User   string // substring of the last user message
	Text   string // substring of any message
	Role   string // X-Deepresearch-Role header
	Node   string // X-Deepresearch-Node header
	Model  string // requested model
	Schema string // response_format json_schema name
	Tool   string // a tool of this name is offered
	Func   func(*Request) bool
}

func (m Match) matches(r *Request) bool {
	switch {
	case m.System != "" && !strings.Contains(r.System(), m.System),
		m.User != "" && !strings.Contains(r.LastUser(), m.User),
		m.Text != "" && !strings.Contains(r.Text(), m.Text),
		m.Role != "" && r.Role() != m.Role,
		m.Node != "" && r.Node() != m.Node,
		m.Model != "" && r.Model != m.Model,
		m.Schema != "" && r.SchemaName() != m.Schema:
		return false
	}
	if m.Tool != "" {
		found := false
		for _, n := range r.ToolNames() {
			found = found || n == m.Tool
		}
		if !found {
			return false
		}
	}
	return m.Func == nil || m.Func(r)
}
