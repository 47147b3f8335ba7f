package llm

import (
	"fmt"
)

// Message roles on the wire.
const (
	MsgSystem    = "system"
	MsgUser      = "user"
	MsgAssistant = "assistant"
	MsgTool      = "tool"
)

// Message is one chat message.
type Message struct {
	Role       string     `json:"role"` // MsgSystem, MsgUser, MsgAssistant, MsgTool
	Content    string     `json:"content,omitempty"`
	Name       string     `json:"name,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`   // assistant messages asking for tools
	ToolCallID string     `json:"tool_call_id,omitempty"` // tool messages answering a call
}

// System returns a system message.
func System(content string) Message { return Message{Role: MsgSystem, Content: content} }

// User returns a user message.
func User(content string) Message { return Message{Role: MsgUser, Content: content} }

// Assistant returns an assistant message.
func Assistant(content string) Message { return Message{Role: MsgAssistant, Content: content} }

// ToolResult returns the message answering the tool call with id callID.
func ToolResult(callID, content string) Message {
	return Message{Role: MsgTool, ToolCallID: callID, Content: content}
}

// ToolCall is a function call requested by the model.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // JSON text as produced by the model
}

// Decode parses the call's arguments into out, tolerating the usual model
// noise (code fences, trailing commas); see DecodeJSON.
func (tc ToolCall) Decode(out any) error {
	if err := DecodeJSON(tc.Arguments, out); err != nil {
		return fmt.Errorf("tool call %s (%s) arguments: %w", tc.Name, tc.ID, err)
	}
	return nil
}

// Tool describes a function the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments object; nil means no
	// arguments. Use NewTool to derive it from a Go type.
	Parameters *Schema
	// Strict asks the server to enforce the schema exactly.
	Strict bool
}

// NewTool returns a tool whose parameters are the JSON schema of T (a struct).
// The schema is strict unless T contains maps or interfaces.
func NewTool[T any](name, description string) (Tool, error) {
	s, strict, err := schemaForType(typeOf[T](), true)
	if err != nil {
		return Tool{}, fmt.Errorf("tool %s: %w", name, err)
	}
	return Tool{Name: name, Description: description, Parameters: s, Strict: strict}, nil
}

// Tool choice values for Request.ToolChoice; any other non-empty value names
// the one function the model must call.
const (
	ToolChoiceAuto     = "auto"
	ToolChoiceNone     = "none"
	ToolChoiceRequired = "required"
)

// Request is one chat completion request.
type Request struct {
	// Role picks the model (Options.RoleModels, else Options.Model) and is
	// recorded in usage.
	Role Role
	// Model overrides the role's model for this call.
	Model    string
	Messages []Message
	// Temperature; nil leaves the server default. Ignored for reasoning
	// models (o1/o3/o4/gpt-5), which only accept the default.
	Temperature *float64
	// MaxTokens caps the completion; 0 leaves the server default. Sent as
	// max_completion_tokens for reasoning models.
	MaxTokens int
	Tools     []Tool
	// ToolChoice: "" (server default), "auto", "none", "required", or a tool name.
	ToolChoice string
	// SchemaName names the JSON schema in Structured calls (default: derived
	// from the Go type name).
	SchemaName string
	// Final marks the call that writes the final answer: it may spend the
	// Meter's reserve.
	Final bool
	// Seed for providers that support reproducible sampling.
	Seed *int
}

// Temp is a convenience for Request.Temperature.
func Temp(t float64) *float64 { return &t }

// Usage counts tokens.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func (u *Usage) add(v Usage) {
	u.PromptTokens += v.PromptTokens
	u.CompletionTokens += v.CompletionTokens
	u.TotalTokens += v.TotalTokens
}

// Response is the model's answer.
type Response struct {
	ID           string
	Model        string // model that answered, as reported by the server
	Content      string
	Refusal      string // non-empty when the model refused (structured outputs)
	Reasoning    string // reasoning_content, when the server sends it
	ToolCalls    []ToolCall
	FinishReason string // "stop", "length", "tool_calls", "content_filter"
	Usage        Usage
	Cost         float64 // from Options.Prices; 0 when unknown
	Attempts     int     // HTTP attempts, including retries
	// Requests counts every request of the call that reached the server:
	// each attempt, each hedge, each request asked again. Wasted is the
	// usage of those whose answer was not used (failed, retried, lost
	// hedges, cancelled) — the prompt estimated when no usage came back.
	// Usage does not include Wasted; a bill does.
	Requests int
	Wasted   Usage
}

// Billed is the call's whole usage: the answer's and the wasted requests'.
func (r Response) Billed() Usage {
	u := r.Usage
	u.add(r.Wasted)
	return u
}

// Message returns the assistant message to append to the conversation
// (content and tool calls), e.g. before the tool results.
func (r Response) Message() Message {
	return Message{Role: MsgAssistant, Content: r.Content, ToolCalls: r.ToolCalls}
}
