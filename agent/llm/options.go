package llm

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"deepresearch/clock"
)

// Role names the agent step that is asking; each role may use its own model.
type Role string

// The agent's roles.
const (
	RolePlanner    Role = "planner"
	RoleResearcher Role = "researcher"
	RoleWriter     Role = "writer"
	RoleReviewer   Role = "reviewer"
)

// Roles lists the known roles.
var Roles = []Role{RolePlanner, RoleResearcher, RoleWriter, RoleReviewer}

// Provider selects protocol details. The zero value is inferred from BaseURL.
type Provider string

// Providers.
const (
	ProviderOpenAI Provider = "openai" // api.openai.com or any compatible server
	ProviderAzure  Provider = "azure"  // Azure OpenAI: api-key header, deployments, api-version
	ProviderOllama Provider = "ollama" // Ollama's /v1 endpoint; no key needed
	ProviderVLLM   Provider = "vllm"   // vLLM's OpenAI server; key optional
)

// JSONMode chooses how Structured asks for JSON.
type JSONMode string

// JSON modes, strongest first. The client starts at its configured mode and
// steps down (remembering it) when the server rejects response_format.
const (
	JSONModeSchema JSONMode = "json_schema" // response_format json_schema (default)
	JSONModeObject JSONMode = "json_object" // response_format json_object + schema in the prompt
	JSONModePrompt JSONMode = "prompt"      // no response_format; schema in the prompt only
)

// Price is the cost of a model in currency units (USD by convention) per one
// million tokens.
type Price struct {
	Prompt     float64 // per 1M prompt (input) tokens
	Completion float64 // per 1M completion (output) tokens
}

// Cost returns the price of the given token counts.
func (p Price) Cost(prompt, completion int) float64 {
	return (float64(prompt)*p.Prompt + float64(completion)*p.Completion) / 1e6
}

// Defaults used when the corresponding Options field is zero.
const (
	DefaultMaxRetries      = 3
	DefaultTimeout         = 2 * time.Minute
	DefaultMinBackoff      = 500 * time.Millisecond
	DefaultMaxBackoff      = 30 * time.Second
	DefaultMaxRetryAfter   = 2 * time.Minute
	DefaultAzureAPIVersion = "2024-10-21"
	DefaultOpenAIBaseURL   = "https://api.openai.com/v1"
)

// Options configures a Client. Only Model is required (and APIKey for
// api.openai.com / Azure). The package never reads the environment;
// cmd/deepresearch fills Options from it.
type Options struct {
	// APIKey is sent as "Authorization: Bearer" (or "api-key" for Azure).
	// It may be empty for local servers (Ollama, vLLM without --api-key).
	APIKey string
	// BaseURL of the API, e.g. "https://api.openai.com/v1" (default),
	// "http://localhost:11434/v1" (Ollama), "http://gpu:8000/v1" (vLLM), or
	// the Azure resource endpoint "https://NAME.openai.azure.com". A URL with
	// an empty path gets "/v1" appended (except for Azure).
	BaseURL string
	// Provider; inferred from BaseURL when empty (Azure hosts → azure).
	Provider Provider
	// AzureAPIVersion is the api-version query parameter (Azure only).
	AzureAPIVersion string
	// AzureDeployments maps model names to Azure deployment names. A model
	// without an entry is used as the deployment name unchanged.
	AzureDeployments map[string]string

	// Model is the default model for every role.
	Model string
	// RoleModels overrides Model per role.
	RoleModels map[Role]string

	// HTTPClient is used for all requests (default: a new http.Client). The
	// client is not modified.
	HTTPClient *http.Client
	// MaxRetries is the number of retries after the first attempt
	// (default 3). Use a negative value to disable retries.
	MaxRetries int
	// Timeout bounds one attempt as a whole when set. Unset, a streamed
	// attempt is bounded by FirstTokenTimeout and IdleTimeout only (a long
	// answer that keeps coming is not cut), and a plain one by
	// DefaultTimeout. The caller's context bounds the whole call including
	// retries.
	Timeout time.Duration
	// FirstTokenTimeout is how long a streamed attempt waits for its first
	// chunk (default 60s, 5m for reasoning models; never more than Timeout);
	// IdleTimeout how long it waits for each next one (default 30s). Either ends the attempt as a
	// timeout, which is retried.
	FirstTokenTimeout, IdleTimeout time.Duration
	// NoStream asks for whole answers instead of streams. Without it the
	// client streams, and falls back to whole answers by itself when the
	// server refuses stream=true.
	NoStream bool
	// HedgeAfter is the least an attempt waits for its answer to start
	// before the same request is sent again alongside it (default 1s); the
	// wait is 1.5 times the slowest start of the last 32 for the model (3s
	// before any is seen; a reasoning model is not hedged before then). The
	// first answer wins and the other requests are cancelled. Negative
	// disables hedging.
	HedgeAfter time.Duration
	// MinBackoff and MaxBackoff bound the exponential backoff between retries
	// (defaults 500ms and 30s); a random jitter of up to half the delay is
	// subtracted.
	MinBackoff, MaxBackoff time.Duration
	// Jitter returns a random number in [0, 1) that spreads the backoff
	// (nil: math/rand/v2's Float64). Tests inject a fixed source.
	Jitter func() float64
	// MaxRetryAfter caps how long the client waits when the server sends
	// Retry-After; a longer wait fails at once with ErrRateLimited (default 2m).
	MaxRetryAfter time.Duration

	// JSONMode is the starting mode for Structured (default JSONModeSchema).
	JSONMode JSONMode
	// NonStrict disables strict JSON schemas (strict: true, every property
	// required, additionalProperties false). Types containing maps or
	// interfaces are always sent non-strict.
	NonStrict bool

	// Prices per model name, for cost accounting. A model matches its exact
	// name first, then the longest key that is a prefix of it (so "gpt-4o"
	// also prices "gpt-4o-2024-08-06").
	Prices map[string]Price

	// Meter receives usage of every call unless the context carries one
	// (see WithMeter), which takes precedence.
	Meter *Meter

	// OnNotice, if set, is told while a call waits on the model: an
	// attempt without an answer for SlowAfter, a retry being scheduled, a
	// call that gave up. It is called from the calling goroutine or a
	// timer's, possibly concurrently, and must return quickly.
	OnNotice func(Notice)
	// SlowAfter is how long an attempt runs before NoticeSlow (and again
	// every SlowAfter while it waits); default DefaultSlowAfter, negative
	// disables it.
	SlowAfter time.Duration

	// Logger (default: slog.Default()). Prompts and keys are never logged;
	// the debug level logs sizes, models, nodes and timings.
	Logger *slog.Logger
	// Clock times the waits between retries and reads the time for
	// HTTP-date Retry-After values and records (default clock.Real{});
	// tests pass clock.Instant{} to retry without waiting.
	Clock clock.Clock
}

// Names of the settings that errors tell the operator to fix: the
// environment variables cmd/deepresearch fills these Options from.
const (
	EnvAPIKey      = "OPENAI_API_KEY"                 // APIKey
	EnvBaseURL     = "OPENAI_BASE_URL"                // BaseURL
	EnvModel       = "DEEPRESEARCH_MODEL"             // Model
	EnvModelPrefix = "DEEPRESEARCH_MODEL_"            // + PLANNER, RESEARCHER, WRITER, REVIEWER: RoleModels
	EnvDeployments = "DEEPRESEARCH_AZURE_DEPLOYMENTS" // AzureDeployments
	EnvTimeout     = "DEEPRESEARCH_LLM_TIMEOUT"       // Timeout
)

// RoleEnv returns the setting that overrides the model of role, e.g.
// DEEPRESEARCH_MODEL_WRITER.
func RoleEnv(r Role) string { return EnvModelPrefix + strings.ToUpper(string(r)) }

// NeedsAPIKey reports whether an empty APIKey is a configuration error:
// api.openai.com (also when BaseURL is empty) and Azure need a key; any
// other OpenAI-compatible server may run without one.
func (o Options) NeedsAPIKey() bool { return keyRequired(o.BaseURL, o.provider()) }

// provider returns the configured or inferred provider.
func (o *Options) provider() Provider {
	if o.Provider != "" {
		return o.Provider
	}
	if o.BaseURL != "" {
		if u, err := url.Parse(o.BaseURL); err == nil {
			h := strings.ToLower(u.Hostname())
			switch {
			case strings.HasSuffix(h, ".openai.azure.com"), strings.HasSuffix(h, ".cognitiveservices.azure.com"):
				return ProviderAzure
			case u.Port() == "11434":
				return ProviderOllama
			}
		}
	}
	return ProviderOpenAI
}

func isOpenAIHost(base string) bool {
	u, err := url.Parse(base)
	return err == nil && strings.EqualFold(u.Hostname(), "api.openai.com")
}

// keyRequired reports whether an empty API key is a configuration error:
// api.openai.com (also the default when no base URL is set) and Azure always
// need a key; any other OpenAI-compatible server may run without one.
func keyRequired(base string, p Provider) bool {
	if p == ProviderAzure {
		return true
	}
	return base == "" || isOpenAIHost(base)
}

func parseBaseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("%q is not an http(s) URL", s)
	}
	return u, nil
}

// modelFor returns the model for a role and the variable that configures it
// (for error messages).
func (o *Options) modelFor(r Role) (model, envName string) {
	if m := o.RoleModels[r]; m != "" {
		return m, RoleEnv(r)
	}
	return o.Model, EnvModel
}

// priceFor looks up a price by exact name, then by longest prefix.
func priceFor(prices map[string]Price, models ...string) (Price, bool) {
	for _, m := range models {
		if p, ok := prices[m]; ok && m != "" {
			return p, true
		}
	}
	keys := make([]string, 0, len(prices))
	for k := range prices {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, m := range models {
		for _, k := range keys {
			if k != "" && strings.HasPrefix(m, k) {
				return prices[k], true
			}
		}
	}
	return Price{}, false
}
