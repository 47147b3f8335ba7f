package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"deepresearch/agent"
	"deepresearch/agent/llm"
	"deepresearch/storage"
	"deepresearch/tools/fetch"
	"deepresearch/tracing"
)

// The environment variables the commands read (README.md and bot/README.md
// list them). Only loadConfig reads them; the packages take Options.
const (
	envSlackBotToken    = "SLACK_BOT_TOKEN"
	envSlackAppToken    = "SLACK_APP_TOKEN"
	envSlackAPIURL      = "SLACK_API_URL"
	envSlackChannels    = "DEEPRESEARCH_SLACK_CHANNELS"
	envSlackApprovers   = "DEEPRESEARCH_SLACK_APPROVERS"
	envUpdatesPerMinute = "DEEPRESEARCH_SLACK_UPDATES_PER_MINUTE"
	envUpdateBurst      = "DEEPRESEARCH_SLACK_UPDATE_BURST"
	envSlackSearch      = "DEEPRESEARCH_SLACK_SEARCH"

	envAPIKey      = "OPENAI_API_KEY"
	envBaseURL     = "OPENAI_BASE_URL"
	envAPIVersion  = "OPENAI_API_VERSION" // Azure api-version
	envModel       = "DEEPRESEARCH_MODEL"
	envModelPrefix = "DEEPRESEARCH_MODEL_" // + PLANNER, RESEARCHER, WRITER, REVIEWER
	envProvider    = "DEEPRESEARCH_LLM_PROVIDER"
	envDeployments = "DEEPRESEARCH_AZURE_DEPLOYMENTS"
	envPrices      = "DEEPRESEARCH_LLM_PRICES"
	envMaxRetries  = "DEEPRESEARCH_LLM_MAX_RETRIES"
	envTimeout     = "DEEPRESEARCH_LLM_TIMEOUT"
	envFirstToken  = "DEEPRESEARCH_LLM_FIRST_TOKEN_TIMEOUT"
	envIdle        = "DEEPRESEARCH_LLM_IDLE_TIMEOUT"
	envJSONMode    = "DEEPRESEARCH_LLM_JSON_MODE"
	envCheckEvery  = "DEEPRESEARCH_LLM_CHECK_EVERY"

	envTavilyKey  = "TAVILY_API_KEY"
	envTavilyURL  = "TAVILY_BASE_URL"
	envSearXNGURL = "SEARXNG_URL"
	envDocsDir    = "DEEPRESEARCH_DOCS_DIR"
	envMCPConfig  = "DEEPRESEARCH_MCP_CONFIG"

	envFetchAllow = "DEEPRESEARCH_FETCH_ALLOW"

	envDatabaseURL = "DATABASE_URL"
	envDataDir     = "DEEPRESEARCH_DATA_DIR"

	envDigestTick = "DEEPRESEARCH_DIGEST_TICK"

	envMaxRunsPerUser    = "DEEPRESEARCH_MAX_RUNS_PER_USER"
	envMaxConcurrentRuns = "DEEPRESEARCH_MAX_CONCURRENT_RUNS"
	envRunLease          = "DEEPRESEARCH_RUN_LEASE"
	envTeamSize          = "DEEPRESEARCH_TEAM_SIZE"
	envApprovePlan       = "DEEPRESEARCH_APPROVE_PLAN"
	envApproveDraft      = "DEEPRESEARCH_APPROVE_DRAFT"

	envHTTPAddr = "DEEPRESEARCH_HTTP_ADDR"
	envMCPAddr  = "DEEPRESEARCH_MCP_ADDR"
	envMCPToken = "DEEPRESEARCH_MCP_TOKEN"
	envLogLevel = "DEEPRESEARCH_LOG_LEVEL"
)

// defaultModel is the model when DEEPRESEARCH_MODEL is unset and the
// endpoint is OpenAI's.
const defaultModel = "gpt-4o-mini"

// roleEnv is the variable that overrides the model of r, e.g.
// DEEPRESEARCH_MODEL_WRITER.
func roleEnv(r llm.Role) string { return envModelPrefix + strings.ToUpper(string(r)) }

// config is the whole configuration of the commands, read once from the
// environment by loadConfig. The groups are embedded so that a field reads
// the same from the group (cfg.Slack.Approvers) or the config (cfg.Approvers).
type config struct {
	Slack
	Model
	Search
	Fetch
	Storage storage.Config // DATABASE_URL, DEEPRESEARCH_DATA_DIR
	Digests
	Limits
	Approvals
	Server
	// Tracing is set up by the command from the OTEL_* variables
	// (startTracing); nil: none.
	Tracing *tracing.Setup
}

// serveConfig is the configuration serve runs with.
type serveConfig = config

// Slack is the bot's connection to Slack and its pacing there.
type Slack struct {
	BotToken, AppToken, APIURL string   // SLACK_BOT_TOKEN, SLACK_APP_TOKEN, SLACK_API_URL
	Channels, Approvers        []string // DEEPRESEARCH_SLACK_CHANNELS, DEEPRESEARCH_SLACK_APPROVERS
	// UpdatesPerMinute and UpdateBurst are the workspace's chat.update
	// budget, split among the live replicas; negative: unlimited.
	UpdatesPerMinute int // DEEPRESEARCH_SLACK_UPDATES_PER_MINUTE (50)
	UpdateBurst      int // DEEPRESEARCH_SLACK_UPDATE_BURST (20)
	// WorkspaceSearch lets a run search the messages its requester can see
	// (assistant.search.context) when the question is about the team's own
	// matters: DEEPRESEARCH_SLACK_SEARCH (true).
	WorkspaceSearch bool
}

// Model is the LLM endpoint.
type Model struct {
	LLM llm.Options // OPENAI_*, DEEPRESEARCH_MODEL*, DEEPRESEARCH_LLM_*
	// CheckEvery is how often serve checks the endpoint again while it is
	// not usable (DEEPRESEARCH_LLM_CHECK_EVERY, 30s).
	CheckEvery time.Duration
}

// Search is the search providers; each is used when set.
type Search struct {
	TavilyAPIKey, TavilyBaseURL string // TAVILY_API_KEY, TAVILY_BASE_URL
	SearXNGURL                  string // SEARXNG_URL
	DocsDir                     string // DEEPRESEARCH_DOCS_DIR
	// MCPConfig is the path of the MCP servers' JSON file
	// (DEEPRESEARCH_MCP_CONFIG); see tools/mcpsource.
	MCPConfig string
}

// Fetch is the page fetcher's settings.
type Fetch struct {
	FetchAllow string // DEEPRESEARCH_FETCH_ALLOW, in fetch.ParseAllowList's format
}

// Digests is the digest scheduler's settings.
type Digests struct {
	DigestTick time.Duration // DEEPRESEARCH_DIGEST_TICK; 0: the scheduler's default
}

// Limits bounds the runs of one serve process.
type Limits struct {
	MaxRunsPerUser    int           // DEEPRESEARCH_MAX_RUNS_PER_USER (3)
	MaxConcurrentRuns int           // DEEPRESEARCH_MAX_CONCURRENT_RUNS (8), flag -max-runs
	Lease             time.Duration // DEEPRESEARCH_RUN_LEASE; 0: the bot's default (30s)
	// TeamSize is the researchers per subtask of a run that asks for no
	// team (DEEPRESEARCH_TEAM_SIZE, 1 to agent.MaxTeamSize; default 1).
	TeamSize int
}

// Approvals are the steps a run in Slack stops at for a person.
type Approvals struct {
	ApprovePlan  bool // DEEPRESEARCH_APPROVE_PLAN (false)
	ApproveDraft bool // DEEPRESEARCH_APPROVE_DRAFT (true)
}

// Server is serve's own process settings.
type Server struct {
	HTTPAddr string     // /healthz and /metrics: DEEPRESEARCH_HTTP_ADDR (:9090), flag -http; "" disables
	LogLevel slog.Level // DEEPRESEARCH_LOG_LEVEL (info)
	// MCPAddr serves deep research over MCP's streamable HTTP
	// (DEEPRESEARCH_MCP_ADDR; "" off, the default) to clients with the
	// bearer token MCPToken (DEEPRESEARCH_MCP_TOKEN, required with it).
	MCPAddr, MCPToken string
}

// configError names a setting that is missing or wrong; it is printed as one line.
type configError struct{ name, msg string }

func (e configError) Error() string { return e.name + ": " + e.msg }

// loadConfig reads every variable, applies the defaults and refuses a value
// it cannot use with an error naming the variable. Settings only some
// commands need (the Slack tokens, the API key) are checked by
// Slack.check and Model.check.
func loadConfig(getenv func(string) string) (config, error) {
	var c config
	var err error
	if c.Slack, err = loadSlack(getenv); err != nil {
		return config{}, err
	}
	c.HTTPAddr = orDefault(getenv(envHTTPAddr), ":9090")
	if strings.EqualFold(c.HTTPAddr, "off") {
		c.HTTPAddr = ""
	}
	c.MCPAddr, c.MCPToken = getenv(envMCPAddr), getenv(envMCPToken)
	if c.MCPAddr != "" && len(c.MCPToken) < 16 {
		return config{}, configError{envMCPToken, "set a bearer token of at least 16 characters for the MCP endpoint of " + envMCPAddr}
	}
	if lv := getenv(envLogLevel); lv != "" {
		if err := c.LogLevel.UnmarshalText([]byte(lv)); err != nil {
			return config{}, configError{envLogLevel, fmt.Sprintf("%q is not debug, info, warn or error", lv)}
		}
	}
	if err := loadRuns(getenv, &c); err != nil {
		return config{}, err
	}
	if c.LLM, err = loadLLM(getenv); err != nil {
		return config{}, err
	}
	c.Search = Search{
		TavilyAPIKey:  getenv(envTavilyKey),
		TavilyBaseURL: getenv(envTavilyURL),
		SearXNGURL:    getenv(envSearXNGURL),
		DocsDir:       getenv(envDocsDir),
		MCPConfig:     getenv(envMCPConfig),
	}
	c.FetchAllow = getenv(envFetchAllow)
	if _, err := fetch.ParseAllowList(c.FetchAllow); err != nil {
		return config{}, configError{envFetchAllow, err.Error()}
	}
	c.Storage = storage.Config{DatabaseURL: getenv(envDatabaseURL), DataDir: getenv(envDataDir)}
	return c, nil
}

func loadSlack(getenv func(string) string) (Slack, error) {
	s := Slack{
		BotToken:  strings.TrimSpace(getenv(envSlackBotToken)),
		AppToken:  strings.TrimSpace(getenv(envSlackAppToken)),
		APIURL:    strings.TrimSpace(getenv(envSlackAPIURL)),
		Channels:  splitList(getenv(envSlackChannels)),
		Approvers: splitList(getenv(envSlackApprovers)),
	}
	if s.APIURL != "" {
		u, err := url.Parse(s.APIURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return Slack{}, configError{envSlackAPIURL, fmt.Sprintf("%q is not an http(s) URL; unset it to use Slack's own API", s.APIURL)}
		}
	}
	// Slack's chat.update budget (Tier 3) is per workspace: these are the
	// workspace's, the same on every replica; the replicas on one database
	// split it among themselves by how many are live (bot.Options).
	var err error
	if s.UpdatesPerMinute, err = nonZeroIntVar(getenv, envUpdatesPerMinute, 50); err != nil {
		return Slack{}, err
	}
	if s.UpdateBurst, err = nonZeroIntVar(getenv, envUpdateBurst, 20); err != nil {
		return Slack{}, err
	}
	if s.WorkspaceSearch, err = boolVar(getenv, envSlackSearch, true); err != nil {
		return Slack{}, err
	}
	return s, nil
}

// check reports a missing or malformed token; serve needs both.
func (s Slack) check() error {
	switch {
	case s.BotToken == "":
		return configError{envSlackBotToken, "not set; set it to the app's Bot User OAuth Token (xoxb-…)"}
	case !strings.HasPrefix(s.BotToken, "xoxb-"):
		return configError{envSlackBotToken, "must be a bot token starting with xoxb- (OAuth & Permissions → Bot User OAuth Token)"}
	case s.AppToken == "":
		return configError{envSlackAppToken, "not set; set it to an app-level token (xapp-…) with the connections:write scope"}
	case !strings.HasPrefix(s.AppToken, "xapp-"):
		return configError{envSlackAppToken, "must be an app-level token starting with xapp- (Basic Information → App-Level Tokens, scope connections:write)"}
	}
	return nil
}

// loadLLM builds the model client's Options. Values are trimmed; errors
// wrap llm.ErrConfig and name the variable.
//
//	OPENAI_API_KEY                  API key. Required for api.openai.com and Azure
//	                                (Model.check). May be empty when OPENAI_BASE_URL
//	                                points at another server (Ollama, vLLM, a proxy).
//	OPENAI_BASE_URL                 endpoint (default https://api.openai.com/v1)
//	OPENAI_API_VERSION              Azure api-version (default 2024-10-21)
//	DEEPRESEARCH_LLM_PROVIDER       openai|azure|ollama|vllm (default: inferred)
//	DEEPRESEARCH_MODEL              default model (default gpt-4o-mini on OpenAI;
//	                                elsewhere left empty: llm.PickModel takes the
//	                                server's only model, or names the choices)
//	DEEPRESEARCH_MODEL_PLANNER      per-role overrides (also _RESEARCHER,
//	                                _WRITER, _REVIEWER)
//	DEEPRESEARCH_AZURE_DEPLOYMENTS  model=deployment pairs, comma separated
//	DEEPRESEARCH_LLM_PRICES         model=prompt/completion prices per 1M
//	                                tokens, comma separated
//	DEEPRESEARCH_LLM_MAX_RETRIES    retries after the first attempt (default 3;
//	                                0: none)
//	DEEPRESEARCH_LLM_TIMEOUT        a whole attempt's limit, Go duration (default:
//	                                none for streamed answers, 2m for plain ones)
//	DEEPRESEARCH_LLM_FIRST_TOKEN_TIMEOUT  wait for a streamed answer's first
//	                                chunk (default 60s)
//	DEEPRESEARCH_LLM_IDLE_TIMEOUT   wait between chunks (default 30s)
//	DEEPRESEARCH_LLM_JSON_MODE      json_schema|json_object|prompt
func loadLLM(getenv func(string) string) (llm.Options, error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	o := llm.Options{
		APIKey:          get(envAPIKey),
		BaseURL:         get(envBaseURL),
		Provider:        llm.Provider(strings.ToLower(get(envProvider))),
		AzureAPIVersion: get(envAPIVersion),
		Model:           get(envModel),
		JSONMode:        llm.JSONMode(get(envJSONMode)),
	}
	if err := checkEndpoint(o); err != nil {
		return llm.Options{}, err
	}
	if o.Model == "" && (o.BaseURL == "" || openAIHost(o.BaseURL)) {
		o.Model = defaultModel
	}
	for _, r := range llm.Roles {
		if m := get(roleEnv(r)); m != "" {
			if o.RoleModels == nil {
				o.RoleModels = map[llm.Role]string{}
			}
			o.RoleModels[r] = m
		}
	}
	if err := loadLLMTables(get, &o); err != nil {
		return llm.Options{}, err
	}
	if err := loadLLMLimits(get, &o); err != nil {
		return llm.Options{}, err
	}
	return o, nil
}

// checkEndpoint checks the provider, the JSON mode and the base URL.
func checkEndpoint(o llm.Options) error {
	switch o.Provider {
	case "", llm.ProviderOpenAI, llm.ProviderAzure, llm.ProviderOllama, llm.ProviderVLLM:
	default:
		return fmt.Errorf("%w: %s=%q: use openai, azure, ollama or vllm", llm.ErrConfig, envProvider, o.Provider)
	}
	switch o.JSONMode {
	case "", llm.JSONModeSchema, llm.JSONModeObject, llm.JSONModePrompt:
	default:
		return fmt.Errorf("%w: %s=%q: use json_schema, json_object or prompt", llm.ErrConfig, envJSONMode, o.JSONMode)
	}
	if o.BaseURL != "" {
		if err := checkHTTPURL(o.BaseURL); err != nil {
			return fmt.Errorf("%w: %s: %v", llm.ErrConfig, envBaseURL, err)
		}
	}
	return nil
}

// loadLLMTables reads the Azure deployments and the prices into o.
func loadLLMTables(get func(string) string, o *llm.Options) error {
	if v := get(envDeployments); v != "" {
		pairs, err := parsePairs(v)
		if err != nil {
			return fmt.Errorf("%w: %s: %v (want model=deployment,...)", llm.ErrConfig, envDeployments, err)
		}
		o.AzureDeployments = pairs
	}
	if v := get(envPrices); v != "" {
		prices, err := parsePrices(v)
		if err != nil {
			return fmt.Errorf("%w: %s: %v (want model=prompt/completion per 1M tokens, e.g. gpt-4o=2.5/10)", llm.ErrConfig, envPrices, err)
		}
		o.Prices = prices
	}
	return nil
}

// loadLLMLimits reads the retries and the timeouts into o.
func loadLLMLimits(get func(string) string, o *llm.Options) error {
	if v := get(envMaxRetries); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%w: %s=%q: want an integer", llm.ErrConfig, envMaxRetries, v)
		}
		if n == 0 {
			n = -1 // explicit zero means "no retries"
		}
		o.MaxRetries = n
	}
	for _, e := range []struct {
		name string
		dst  *time.Duration
	}{{envTimeout, &o.Timeout}, {envFirstToken, &o.FirstTokenTimeout}, {envIdle, &o.IdleTimeout}} {
		if v := get(e.name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return fmt.Errorf("%w: %s=%q: want a positive Go duration such as 90s", llm.ErrConfig, e.name, v)
			}
			*e.dst = d
		}
	}
	return nil
}

// loadRuns reads how runs are done into c: the limits per user and
// process, the team size, the approval steps, the lease and the ticks.
func loadRuns(getenv func(string) string, c *config) error {
	var err error
	if c.MaxRunsPerUser, err = intVar(getenv, envMaxRunsPerUser, 3); err != nil {
		return err
	}
	if c.MaxConcurrentRuns, err = intVar(getenv, envMaxConcurrentRuns, 8); err != nil {
		return err
	}
	if c.TeamSize, err = intVar(getenv, envTeamSize, 1); err != nil {
		return err
	}
	if c.TeamSize < 1 || c.TeamSize > agent.MaxTeamSize {
		return configError{envTeamSize, fmt.Sprintf("%d is not a team size from 1 to %d", c.TeamSize, agent.MaxTeamSize)}
	}
	if c.ApprovePlan, err = boolVar(getenv, envApprovePlan, false); err != nil {
		return err
	}
	if c.ApproveDraft, err = boolVar(getenv, envApproveDraft, true); err != nil {
		return err
	}
	if v := strings.TrimSpace(getenv(envRunLease)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 100*time.Millisecond {
			return configError{envRunLease, fmt.Sprintf("%q is not a duration of at least 100ms (e.g. 30s)", v)}
		}
		c.Lease = d
	}
	if c.DigestTick, err = positiveDuration(getenv, envDigestTick, 0); err != nil {
		return err
	}
	if c.CheckEvery, err = positiveDuration(getenv, envCheckEvery, defaultCheckEvery); err != nil {
		return err
	}
	return nil
}

// check reports a missing API key for an endpoint that needs one
// (api.openai.com, also the default, and Azure); ask and serve need it.
func (m Model) check() error {
	o := m.LLM
	if o.APIKey != "" || !o.NeedsAPIKey() {
		return nil
	}
	if o.BaseURL == "" {
		return fmt.Errorf("%w: set %s to your OpenAI API key, or set %s to an OpenAI-compatible server (e.g. http://localhost:11434/v1 for Ollama) that needs no key",
			llm.ErrMissingAPIKey, envAPIKey, envBaseURL)
	}
	return fmt.Errorf("%w: set %s to the key for %s", llm.ErrMissingAPIKey, envAPIKey, o.BaseURL)
}

func openAIHost(base string) bool {
	u, err := url.Parse(base)
	return err == nil && strings.EqualFold(u.Hostname(), "api.openai.com")
}

func checkHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", s)
	}
	return nil
}

// parsePrices parses "model=prompt/completion,..." with prices per one
// million tokens, e.g. "gpt-4o=2.5/10,gpt-4o-mini=0.15/0.6".
func parsePrices(s string) (map[string]llm.Price, error) {
	pairs, err := parsePairs(s)
	if err != nil {
		return nil, err
	}
	out := make(map[string]llm.Price, len(pairs))
	for model, v := range pairs {
		in, outp, ok := strings.Cut(v, "/")
		if !ok {
			return nil, fmt.Errorf("price for %q: want prompt/completion", model)
		}
		p, err1 := strconv.ParseFloat(strings.TrimSpace(in), 64)
		c, err2 := strconv.ParseFloat(strings.TrimSpace(outp), 64)
		if err1 != nil || err2 != nil || p < 0 || c < 0 {
			return nil, fmt.Errorf("price for %q: %q is not two non-negative numbers", model, v)
		}
		out[model] = llm.Price{Prompt: p, Completion: c}
	}
	return out, nil
}

// parsePairs parses "key=value,..."; blank entries are skipped.
func parsePairs(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("bad entry %q", part)
		}
		out[k] = v
	}
	return out, nil
}

func orDefault(v, def string) string {
	if v = strings.TrimSpace(v); v != "" {
		return v
	}
	return def
}

func splitList(v string) []string {
	out := strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })
	if len(out) == 0 {
		return nil
	}
	return out
}

// envVar reads a variable with parse; unset or blank is def. A value parse
// refuses is a configError saying what the value is not.
func envVar[T any](getenv func(string) string, name string, def T, parse func(string) (T, error), isNot string) (T, error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return def, nil
	}
	x, err := parse(v)
	if err != nil {
		var zero T
		return zero, configError{name, fmt.Sprintf("%q is not %s", v, isNot)}
	}
	return x, nil
}

func intVar(getenv func(string) string, name string, def int) (int, error) {
	return envVar(getenv, name, def, strconv.Atoi, "a whole number")
}

// nonZeroIntVar reads a whole number that is positive, or negative for
// "unlimited".
func nonZeroIntVar(getenv func(string) string, name string, def int) (int, error) {
	n, err := intVar(getenv, name, def)
	if err == nil && n == 0 {
		return 0, configError{name, "0 is not allowed; use a positive number, or -1 for no limit"}
	}
	return n, err
}

func boolVar(getenv func(string) string, name string, def bool) (bool, error) {
	return envVar(getenv, name, def, strconv.ParseBool, "true or false")
}

// positiveDuration reads a Go duration greater than zero.
func positiveDuration(getenv func(string) string, name string, def time.Duration) (time.Duration, error) {
	return envVar(getenv, name, def, func(v string) (time.Duration, error) {
		d, err := time.ParseDuration(v)
		if err == nil && d <= 0 {
			err = errors.New("not positive")
		}
		return d, err
	}, "a positive duration such as 30s")
}
