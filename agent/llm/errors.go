package llm

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Errors returned by the client wrap one of these (test with
// errors.Is) and, where the server answered, an *Error carrying the details.
// The underlying go-openai error (*openai.APIError or *openai.RequestError)
// stays reachable with errors.As.
var (
	// ErrMissingAPIKey: OPENAI_API_KEY is unset and the endpoint needs one.
	ErrMissingAPIKey = errors.New("llm: missing API key")
	// ErrConfig: the Options are unusable (no model, bad URL, ...).
	ErrConfig = errors.New("llm: invalid configuration")
	// ErrUnauthorized: the server answered 401; the key is wrong or revoked.
	ErrUnauthorized = errors.New("llm: unauthorized")
	// ErrForbidden: the server answered 403; the key lacks access.
	ErrForbidden = errors.New("llm: forbidden")
	// ErrModelNotFound: the server answered 404 for the model or deployment.
	ErrModelNotFound = errors.New("llm: model not found")
	// ErrBadRequest: the server rejected the request (400, 422 and other 4xx).
	ErrBadRequest = errors.New("llm: bad request")
	// ErrContextLength: the prompt does not fit in the model's context window.
	ErrContextLength = errors.New("llm: context length exceeded")
	// ErrRateLimited: 429 after all retries, or a quota that retrying cannot fix.
	ErrRateLimited = errors.New("llm: rate limited")
	// ErrServer: 5xx after all retries.
	ErrServer = errors.New("llm: server error")
	// ErrTimeout: every attempt ran past Options.Timeout.
	ErrTimeout = errors.New("llm: request timed out")
	// ErrConnection: the server could not be reached after all retries.
	ErrConnection = errors.New("llm: connection failed")
	// ErrMalformedResponse: the server answered 2xx with a body that is not a
	// chat completion (after all retries).
	ErrMalformedResponse = errors.New("llm: malformed response")
	// ErrInvalidJSON: a structured reply could not be parsed even after the
	// single repair attempt.
	ErrInvalidJSON = errors.New("llm: reply is not valid JSON")
	// ErrCutOff: a structured reply was cut off (finish_reason "length", or
	// JSON that never closes). It always comes with ErrInvalidJSON.
	ErrCutOff = errors.New("llm: reply was cut off")
	// ErrRefused: the model refused to answer (structured outputs "refusal").
	ErrRefused = errors.New("llm: model refused")
	// ErrBudgetExceeded: the call would exceed the Meter's token budget.
	ErrBudgetExceeded = errors.New("llm: token budget exceeded")
	// ErrSchema: a Go type cannot be turned into a JSON schema.
	ErrSchema = errors.New("llm: cannot derive JSON schema")
)

// Error describes a failed call after the server answered (or after the
// retries ran out). It wraps a sentinel (Kind) and the cause.
type Error struct {
	Kind     error  // one of the sentinels above
	Status   int    // HTTP status, 0 if no response
	Code     string // provider error code, e.g. "context_length_exceeded"
	Message  string // provider message (no prompt content)
	Model    string // model asked for
	Hint     string // what the operator should do
	Attempts int    // attempts made
	Err      error  // underlying error (go-openai or transport)
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Kind.Error())
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	if e.Model != "" {
		fmt.Fprintf(&b, " model=%q", e.Model)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", strings.Join(strings.Fields(e.Message), " ")) // one line
	} else if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " [after %d attempts]", e.Attempts)
	}
	if e.Hint != "" {
		fmt.Fprintf(&b, " — %s", e.Hint)
	}
	return b.String()
}

// Unwrap exposes both the sentinel and the cause to errors.Is / errors.As.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}
