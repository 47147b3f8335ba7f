// Package llm is deepresearch's client for OpenAI-compatible Chat
// Completions APIs (OpenAI, Azure OpenAI, Ollama, vLLM), built on
// github.com/sashabaranov/go-openai.
//
// # Configuration
//
// New takes an Options struct; the package never reads the environment.
// cmd/deepresearch fills Options from OPENAI_API_KEY, OPENAI_BASE_URL,
// DEEPRESEARCH_MODEL, DEEPRESEARCH_MODEL_{PLANNER,RESEARCHER,WRITER,REVIEWER}
// and a few DEEPRESEARCH_LLM_* variables (see its config.go); errors name
// those settings (EnvAPIKey, EnvBaseURL, EnvModel, RoleEnv). The API key is
// required for api.openai.com and Azure; for any other base URL (Ollama at
// http://localhost:11434/v1, vLLM, a local proxy) it may be empty, and no
// Authorization header is sent.
//
// # Calls
//
// Chat sends messages, tools and tool choice and returns content, tool calls,
// usage, model and finish reason. Structured[T] asks for JSON conforming to
// the schema derived from T (GenerateSchema), falls back from json_schema to
// json_object to a prompt-only request when the server rejects
// response_format (remembered per Client), parses replies tolerantly
// (DecodeJSON: think blocks, code fences, prose, trailing commas) and asks
// once for a repair when parsing fails. A reply cut off mid-JSON or at the
// length limit is never decoded: it is asked for again, within MaxRetries.
//
// Transient failures (429, 408, 5xx, per-attempt timeouts, connection errors,
// malformed 2xx bodies) are retried with exponential backoff and jitter,
// honouring Retry-After (seconds or HTTP date) and retry-after-ms as the
// whole wait. The first failure of a call that belongs to its one request (a
// malformed body, a request that hung) is retried at once, and does not
// count toward the backoff; a 5xx backs off from its first retry. Other 4xx
// are not retried; 401, 403 and 404 map to ErrUnauthorized, ErrForbidden and
// ErrModelNotFound with a hint naming the variable to fix. Retry-After is
// read from the response headers (for a failed stream, the transport keeps
// them, since go-openai drops them).
//
// Answers are streamed (stream=true with usage) and put back together, so
// structured outputs and tool calls work as with whole answers. An attempt
// times out when its first chunk takes longer than FirstTokenTimeout or a
// next one longer than IdleTimeout — not after a fixed total, which would
// cut long answers or leave a dead connection waiting for minutes. An
// attempt that has not started answering half as late again as the
// slowest start seen lately is hedged: the same request goes out again (at most
// twice), the first answer wins and the others are cancelled; when all of
// them still hang one interval after the last, the attempt gives up (a
// timeout) and a fresh one follows. A server that
// refuses stream=true gets plain requests from then on; one that ignores it
// is read as it answered.
//
// While a call waits, Options.OnNotice hears of it: an attempt without an
// answer for SlowAfter (NoticeSlow), a retry being scheduled (NoticeRetry),
// a call that gave up (NoticeFailed), so that a terminal or a status can
// say "waiting for the model" instead of staying silent.
//
// # Before the first call
//
// Check verifies, without a chat call, that the endpoint answers, accepts
// the key and serves every model in use (GET /models, then GET
// /models/{id} for one the list lacks); its one-line error names
// OPENAI_BASE_URL, OPENAI_API_KEY or the model's variable. PickModel fills
// in an unset DEEPRESEARCH_MODEL with the server's only model, or lists the
// served ones in its error.
//
// # Usage and budgets
//
// Every call is recorded in a Meter: the one attached to the context with
// WithMeter, else Options.Meter (one Client can serve many runs, each with
// its own Meter in its context). Records carry the role, the node
// (WithNode), the model, tokens and cost (Options.Prices), and count every
// request that reached the server: failed and retried attempts, hedges that
// lost, a call cancelled in flight — their prompts estimated, since no usage
// comes back for them (Response.Requests, Response.Wasted; a call that got
// no answer is recorded as Failed). A Meter with a
// budget refuses calls that would not fit with ErrBudgetExceeded before
// anything is sent; Request.Final lets the final answer use the reserve
// (NewDefaultMeter: 1,000,000 tokens, 15% reserved). When the
// server reports no usage, tokens are estimated as characters/4.
//
// Each request carries X-Deepresearch-Role and X-Deepresearch-Node headers
// so that test servers (package llmtest) can tell which step is asking.
// Keys and prompts are never logged; debug logs carry sizes and timings.
package llm
