package main

import (
	"errors"
	"log/slog"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"deepresearch/agent/llm"
	"deepresearch/storage"
)

// defaultConfig is what loadConfig makes of an empty environment.
func defaultConfig() config {
	return config{
		Slack:     Slack{UpdatesPerMinute: 50, UpdateBurst: 20, WorkspaceSearch: true},
		Model:     Model{LLM: llm.Options{Model: "gpt-4o-mini"}, CheckEvery: 30 * time.Second},
		Limits:    Limits{MaxRunsPerUser: 3, MaxConcurrentRuns: 8, TeamSize: 1},
		Approvals: Approvals{ApproveDraft: true},
		Server:    Server{HTTPAddr: ":9090", LogLevel: slog.LevelInfo},
	}
}

// configCases covers every variable: a value it takes (want changes the
// default config accordingly) and, where there is one, a value it refuses
// (err is the whole message).
var configCases = []struct {
	name   string
	env    map[string]string
	want   func(*config)
	err    string
	errIs  error
	prefix bool // err is the start of the message (the rest is the standard library's)
}{
	{name: "defaults", env: map[string]string{}, want: func(*config) {}},

	// Slack
	{name: "bot token", env: map[string]string{"SLACK_BOT_TOKEN": " xoxb-1 "}, want: func(c *config) { c.BotToken = "xoxb-1" }},
	{name: "app token", env: map[string]string{"SLACK_APP_TOKEN": "xapp-1\n"}, want: func(c *config) { c.AppToken = "xapp-1" }},
	{name: "api url", env: map[string]string{"SLACK_API_URL": "http://127.0.0.1:9/api/"}, want: func(c *config) { c.APIURL = "http://127.0.0.1:9/api/" }},
	{name: "api url not http", env: map[string]string{"SLACK_API_URL": "slack.example"},
		err: `SLACK_API_URL: "slack.example" is not an http(s) URL; unset it to use Slack's own API`},
	{name: "channels", env: map[string]string{"DEEPRESEARCH_SLACK_CHANNELS": "C1, C2 C3"}, want: func(c *config) { c.Channels = []string{"C1", "C2", "C3"} }},
	{name: "approvers", env: map[string]string{"DEEPRESEARCH_SLACK_APPROVERS": "U1,U2"}, want: func(c *config) { c.Approvers = []string{"U1", "U2"} }},
	{name: "workspace search off", env: map[string]string{"DEEPRESEARCH_SLACK_SEARCH": "false"}, want: func(c *config) { c.WorkspaceSearch = false }},
	{name: "workspace search not a bool", env: map[string]string{"DEEPRESEARCH_SLACK_SEARCH": "sometimes"}, err: "DEEPRESEARCH_SLACK_SEARCH", prefix: true},
	{name: "updates per minute", env: map[string]string{"DEEPRESEARCH_SLACK_UPDATES_PER_MINUTE": "17"}, want: func(c *config) { c.UpdatesPerMinute = 17 }},
	{name: "updates unlimited", env: map[string]string{"DEEPRESEARCH_SLACK_UPDATES_PER_MINUTE": "-1"}, want: func(c *config) { c.UpdatesPerMinute = -1 }},
	{name: "updates not a number", env: map[string]string{"DEEPRESEARCH_SLACK_UPDATES_PER_MINUTE": "fifty"},
		err: `DEEPRESEARCH_SLACK_UPDATES_PER_MINUTE: "fifty" is not a whole number`},
	{name: "updates zero", env: map[string]string{"DEEPRESEARCH_SLACK_UPDATES_PER_MINUTE": "0"},
		err: "DEEPRESEARCH_SLACK_UPDATES_PER_MINUTE: 0 is not allowed; use a positive number, or -1 for no limit"},
	{name: "burst", env: map[string]string{"DEEPRESEARCH_SLACK_UPDATE_BURST": "7"}, want: func(c *config) { c.UpdateBurst = 7 }},
	{name: "burst zero", env: map[string]string{"DEEPRESEARCH_SLACK_UPDATE_BURST": "0"},
		err: "DEEPRESEARCH_SLACK_UPDATE_BURST: 0 is not allowed; use a positive number, or -1 for no limit"},
	{name: "burst fraction", env: map[string]string{"DEEPRESEARCH_SLACK_UPDATE_BURST": "1.5"},
		err: `DEEPRESEARCH_SLACK_UPDATE_BURST: "1.5" is not a whole number`},

	// Server
	{name: "http addr", env: map[string]string{"DEEPRESEARCH_HTTP_ADDR": " 127.0.0.1:8080 "}, want: func(c *config) { c.HTTPAddr = "127.0.0.1:8080" }},
	{name: "http off", env: map[string]string{"DEEPRESEARCH_HTTP_ADDR": "OFF"}, want: func(c *config) { c.HTTPAddr = "" }},
	{name: "mcp endpoint", env: map[string]string{"DEEPRESEARCH_MCP_ADDR": "127.0.0.1:9191", "DEEPRESEARCH_MCP_TOKEN": "0123456789abcdef"},
		want: func(c *config) { c.MCPAddr, c.MCPToken = "127.0.0.1:9191", "0123456789abcdef" }},
	{name: "mcp endpoint without token", env: map[string]string{"DEEPRESEARCH_MCP_ADDR": "127.0.0.1:9191", "DEEPRESEARCH_MCP_TOKEN": "short"},
		err: "DEEPRESEARCH_MCP_TOKEN: set a bearer token of at least 16 characters for the MCP endpoint of DEEPRESEARCH_MCP_ADDR"},
	{name: "log level", env: map[string]string{"DEEPRESEARCH_LOG_LEVEL": "debug"}, want: func(c *config) { c.LogLevel = slog.LevelDebug }},
	{name: "log level unknown", env: map[string]string{"DEEPRESEARCH_LOG_LEVEL": "loud"},
		err: `DEEPRESEARCH_LOG_LEVEL: "loud" is not debug, info, warn or error`},

	// Limits and approvals
	{name: "runs per user", env: map[string]string{"DEEPRESEARCH_MAX_RUNS_PER_USER": "-1"}, want: func(c *config) { c.MaxRunsPerUser = -1 }},
	{name: "runs per user not a number", env: map[string]string{"DEEPRESEARCH_MAX_RUNS_PER_USER": "many"},
		err: `DEEPRESEARCH_MAX_RUNS_PER_USER: "many" is not a whole number`},
	{name: "team size", env: map[string]string{"DEEPRESEARCH_TEAM_SIZE": "3"}, want: func(c *config) { c.TeamSize = 3 }},
	{name: "team size too large", env: map[string]string{"DEEPRESEARCH_TEAM_SIZE": "9"},
		err: `DEEPRESEARCH_TEAM_SIZE: 9 is not a team size from 1 to 4`},
	{name: "concurrent runs", env: map[string]string{"DEEPRESEARCH_MAX_CONCURRENT_RUNS": "2"}, want: func(c *config) { c.MaxConcurrentRuns = 2 }},
	{name: "concurrent runs not a number", env: map[string]string{"DEEPRESEARCH_MAX_CONCURRENT_RUNS": "2x"},
		err: `DEEPRESEARCH_MAX_CONCURRENT_RUNS: "2x" is not a whole number`},
	{name: "lease", env: map[string]string{"DEEPRESEARCH_RUN_LEASE": "100ms"}, want: func(c *config) { c.Lease = 100 * time.Millisecond }},
	{name: "lease too short", env: map[string]string{"DEEPRESEARCH_RUN_LEASE": "50ms"},
		err: `DEEPRESEARCH_RUN_LEASE: "50ms" is not a duration of at least 100ms (e.g. 30s)`},
	{name: "approve plan", env: map[string]string{"DEEPRESEARCH_APPROVE_PLAN": "true"}, want: func(c *config) { c.ApprovePlan = true }},
	{name: "approve plan unclear", env: map[string]string{"DEEPRESEARCH_APPROVE_PLAN": "yes please"},
		err: `DEEPRESEARCH_APPROVE_PLAN: "yes please" is not true or false`},
	{name: "approve draft", env: map[string]string{"DEEPRESEARCH_APPROVE_DRAFT": "0"}, want: func(c *config) { c.ApproveDraft = false }},
	{name: "approve draft unclear", env: map[string]string{"DEEPRESEARCH_APPROVE_DRAFT": "perhaps"},
		err: `DEEPRESEARCH_APPROVE_DRAFT: "perhaps" is not true or false`},

	// Digests
	{name: "digest tick", env: map[string]string{"DEEPRESEARCH_DIGEST_TICK": "5s"}, want: func(c *config) { c.DigestTick = 5 * time.Second }},
	{name: "digest tick negative", env: map[string]string{"DEEPRESEARCH_DIGEST_TICK": "-5s"},
		err: `DEEPRESEARCH_DIGEST_TICK: "-5s" is not a positive duration such as 30s`},

	// Model
	{name: "check every", env: map[string]string{"DEEPRESEARCH_LLM_CHECK_EVERY": "2s"}, want: func(c *config) { c.CheckEvery = 2 * time.Second }},
	{name: "check every zero", env: map[string]string{"DEEPRESEARCH_LLM_CHECK_EVERY": "0s"},
		err: `DEEPRESEARCH_LLM_CHECK_EVERY: "0s" is not a positive duration such as 30s`},
	{name: "api key", env: map[string]string{"OPENAI_API_KEY": " sk-x "}, want: func(c *config) { c.LLM.APIKey = "sk-x" }},
	{name: "openai url keeps the default model", env: map[string]string{"OPENAI_BASE_URL": "https://api.openai.com/v1"},
		want: func(c *config) { c.LLM.BaseURL = "https://api.openai.com/v1" }},
	{name: "other server leaves the model to PickModel", env: map[string]string{"OPENAI_BASE_URL": "http://gpu:8000/v1"},
		want: func(c *config) { c.LLM.BaseURL, c.LLM.Model = "http://gpu:8000/v1", "" }},
	{name: "base url not http", env: map[string]string{"OPENAI_BASE_URL": "localhost:11434"}, errIs: llm.ErrConfig,
		err: `llm: invalid configuration: OPENAI_BASE_URL: "localhost:11434" is not an http(s) URL`},
	{name: "api version", env: map[string]string{"OPENAI_API_VERSION": "2024-06-01"}, want: func(c *config) { c.LLM.AzureAPIVersion = "2024-06-01" }},
	{name: "model", env: map[string]string{"DEEPRESEARCH_MODEL": "qwen3"}, want: func(c *config) { c.LLM.Model = "qwen3" }},
	{name: "role models", env: map[string]string{"DEEPRESEARCH_MODEL_PLANNER": " o3-mini ", "DEEPRESEARCH_MODEL_RESEARCHER": "r",
		"DEEPRESEARCH_MODEL_WRITER": "gpt-4.1", "DEEPRESEARCH_MODEL_REVIEWER": "v"},
		want: func(c *config) {
			c.LLM.RoleModels = map[llm.Role]string{llm.RolePlanner: "o3-mini", llm.RoleResearcher: "r", llm.RoleWriter: "gpt-4.1", llm.RoleReviewer: "v"}
		}},
	{name: "provider", env: map[string]string{"DEEPRESEARCH_LLM_PROVIDER": "VLLM"}, want: func(c *config) { c.LLM.Provider = llm.ProviderVLLM }},
	{name: "provider unknown", env: map[string]string{"DEEPRESEARCH_LLM_PROVIDER": "bard"}, errIs: llm.ErrConfig,
		err: `llm: invalid configuration: DEEPRESEARCH_LLM_PROVIDER="bard": use openai, azure, ollama or vllm`},
	{name: "deployments", env: map[string]string{"DEEPRESEARCH_AZURE_DEPLOYMENTS": "gpt-4o=prod4o, gpt-4.1=w,"},
		want: func(c *config) { c.LLM.AzureDeployments = map[string]string{"gpt-4o": "prod4o", "gpt-4.1": "w"} }},
	{name: "deployments malformed", env: map[string]string{"DEEPRESEARCH_AZURE_DEPLOYMENTS": "gpt-4o"}, errIs: llm.ErrConfig,
		err: `llm: invalid configuration: DEEPRESEARCH_AZURE_DEPLOYMENTS: bad entry "gpt-4o" (want model=deployment,...)`},
	{name: "prices", env: map[string]string{"DEEPRESEARCH_LLM_PRICES": "gpt-4o=2.5/10,gpt-4.1=2/8"},
		want: func(c *config) {
			c.LLM.Prices = map[string]llm.Price{"gpt-4o": {Prompt: 2.5, Completion: 10}, "gpt-4.1": {Prompt: 2, Completion: 8}}
		}},
	{name: "prices not numbers", env: map[string]string{"DEEPRESEARCH_LLM_PRICES": "gpt-4o=cheap"}, errIs: llm.ErrConfig,
		err: `llm: invalid configuration: DEEPRESEARCH_LLM_PRICES: price for "gpt-4o": want prompt/completion (want model=prompt/completion per 1M tokens, e.g. gpt-4o=2.5/10)`},
	{name: "prices negative", env: map[string]string{"DEEPRESEARCH_LLM_PRICES": "gpt-4o=-1/2"}, errIs: llm.ErrConfig,
		err: `llm: invalid configuration: DEEPRESEARCH_LLM_PRICES: price for "gpt-4o": "-1/2" is not two non-negative numbers (want model=prompt/completion per 1M tokens, e.g. gpt-4o=2.5/10)`},
	{name: "max retries", env: map[string]string{"DEEPRESEARCH_LLM_MAX_RETRIES": "5"}, want: func(c *config) { c.LLM.MaxRetries = 5 }},
	{name: "max retries zero means none", env: map[string]string{"DEEPRESEARCH_LLM_MAX_RETRIES": "0"}, want: func(c *config) { c.LLM.MaxRetries = -1 }},
	{name: "max retries not a number", env: map[string]string{"DEEPRESEARCH_LLM_MAX_RETRIES": "few"}, errIs: llm.ErrConfig,
		err: `llm: invalid configuration: DEEPRESEARCH_LLM_MAX_RETRIES="few": want an integer`},
	{name: "timeout", env: map[string]string{"DEEPRESEARCH_LLM_TIMEOUT": "90s"}, want: func(c *config) { c.LLM.Timeout = 90 * time.Second }},
	{name: "timeout not a duration", env: map[string]string{"DEEPRESEARCH_LLM_TIMEOUT": "soon"}, errIs: llm.ErrConfig,
		err: `llm: invalid configuration: DEEPRESEARCH_LLM_TIMEOUT="soon": want a positive Go duration such as 90s`},
	{name: "first token timeout", env: map[string]string{"DEEPRESEARCH_LLM_FIRST_TOKEN_TIMEOUT": "20s"}, want: func(c *config) { c.LLM.FirstTokenTimeout = 20 * time.Second }},
	{name: "first token timeout negative", env: map[string]string{"DEEPRESEARCH_LLM_FIRST_TOKEN_TIMEOUT": "-1s"}, errIs: llm.ErrConfig,
		err: `llm: invalid configuration: DEEPRESEARCH_LLM_FIRST_TOKEN_TIMEOUT="-1s": want a positive Go duration such as 90s`},
	{name: "idle timeout", env: map[string]string{"DEEPRESEARCH_LLM_IDLE_TIMEOUT": "5s"}, want: func(c *config) { c.LLM.IdleTimeout = 5 * time.Second }},
	{name: "idle timeout zero", env: map[string]string{"DEEPRESEARCH_LLM_IDLE_TIMEOUT": "0s"}, errIs: llm.ErrConfig,
		err: `llm: invalid configuration: DEEPRESEARCH_LLM_IDLE_TIMEOUT="0s": want a positive Go duration such as 90s`},
	{name: "json mode", env: map[string]string{"DEEPRESEARCH_LLM_JSON_MODE": "json_object"}, want: func(c *config) { c.LLM.JSONMode = llm.JSONModeObject }},
	{name: "json mode unknown", env: map[string]string{"DEEPRESEARCH_LLM_JSON_MODE": "yaml"}, errIs: llm.ErrConfig,
		err: `llm: invalid configuration: DEEPRESEARCH_LLM_JSON_MODE="yaml": use json_schema, json_object or prompt`},

	// Search, fetch, storage: taken as they are; the providers and the
	// database check them when they are built.
	{name: "tavily", env: map[string]string{"TAVILY_API_KEY": "tvly-1", "TAVILY_BASE_URL": "http://127.0.0.1:9"},
		want: func(c *config) { c.TavilyAPIKey, c.TavilyBaseURL = "tvly-1", "http://127.0.0.1:9" }},
	{name: "searxng", env: map[string]string{"SEARXNG_URL": "http://searx:8080"}, want: func(c *config) { c.SearXNGURL = "http://searx:8080" }},
	{name: "docs dir", env: map[string]string{"DEEPRESEARCH_DOCS_DIR": "./docs"}, want: func(c *config) { c.DocsDir = "./docs" }},
	{name: "mcp config", env: map[string]string{"DEEPRESEARCH_MCP_CONFIG": "./mcp.json"}, want: func(c *config) { c.MCPConfig = "./mcp.json" }},
	{name: "fetch allow", env: map[string]string{"DEEPRESEARCH_FETCH_ALLOW": "wiki.internal, 10.0.0.0/8"}, want: func(c *config) { c.FetchAllow = "wiki.internal, 10.0.0.0/8" }},
	{name: "fetch allow malformed", env: map[string]string{"DEEPRESEARCH_FETCH_ALLOW": "10.0.0.0/99"},
		err: `DEEPRESEARCH_FETCH_ALLOW: fetch: allow-list entry "10.0.0.0/99": `, prefix: true},
	{name: "database", env: map[string]string{"DATABASE_URL": "postgres://db/x", "DEEPRESEARCH_DATA_DIR": "/var/lib/dr"},
		want: func(c *config) { c.Storage = storage.Config{DatabaseURL: "postgres://db/x", DataDir: "/var/lib/dr"} }},
}

func TestLoadConfig(t *testing.T) {
	for _, tc := range configCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := loadConfig(getenv(tc.env))
			if tc.err != "" {
				if err == nil || err.Error() != tc.err && (!tc.prefix || !strings.HasPrefix(err.Error(), tc.err)) {
					t.Fatalf("err = %v\nwant  %s", err, tc.err)
				}
				if tc.errIs != nil && !errors.Is(err, tc.errIs) {
					t.Errorf("err %v does not wrap %v", err, tc.errIs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := defaultConfig()
			tc.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

// The cases above set every variable loadConfig reads, and nothing else.
func TestLoadConfigCasesCoverEveryVariable(t *testing.T) {
	read := map[string]bool{}
	if _, err := loadConfig(func(k string) string { read[k] = true; return "" }); err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, tc := range configCases {
		for k := range tc.env {
			covered[k] = true
		}
	}
	var missing, unknown []string
	for k := range read {
		if !covered[k] {
			missing = append(missing, k)
		}
	}
	for k := range covered {
		if !read[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(unknown)
	if len(missing) > 0 || len(unknown) > 0 {
		t.Errorf("variables read but not tested: %v; tested but not read: %v", missing, unknown)
	}
}

// Settings only some commands need are checked apart: the Slack tokens
// (serve) and the API key of an endpoint that needs one (ask, serve).
func TestConfigChecks(t *testing.T) {
	tokens := map[string]string{"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cases := []struct {
		name  string
		env   map[string]string
		check func(config) error
		err   string
		errIs error
	}{
		{"slack ok", tokens, func(c config) error { return c.Slack.check() }, "", nil},
		{"bot token unset", with(tokens, "SLACK_BOT_TOKEN", " "), func(c config) error { return c.Slack.check() },
			"SLACK_BOT_TOKEN: not set; set it to the app's Bot User OAuth Token (xoxb-…)", nil},
		{"bot token of the wrong kind", with(tokens, "SLACK_BOT_TOKEN", "xapp-oops"), func(c config) error { return c.Slack.check() },
			"SLACK_BOT_TOKEN: must be a bot token starting with xoxb- (OAuth & Permissions → Bot User OAuth Token)", nil},
		{"app token unset", with(tokens, "SLACK_APP_TOKEN", ""), func(c config) error { return c.Slack.check() },
			"SLACK_APP_TOKEN: not set; set it to an app-level token (xapp-…) with the connections:write scope", nil},
		{"app token of the wrong kind", with(tokens, "SLACK_APP_TOKEN", "xoxb-oops"), func(c config) error { return c.Slack.check() },
			"SLACK_APP_TOKEN: must be an app-level token starting with xapp- (Basic Information → App-Level Tokens, scope connections:write)", nil},

		{"key unset for OpenAI", map[string]string{}, func(c config) error { return c.Model.check() },
			"llm: missing API key: set OPENAI_API_KEY to your OpenAI API key, or set OPENAI_BASE_URL to an OpenAI-compatible server (e.g. http://localhost:11434/v1 for Ollama) that needs no key",
			llm.ErrMissingAPIKey},
		{"key unset for an explicit OpenAI URL", map[string]string{"OPENAI_BASE_URL": "https://api.openai.com/v1"}, func(c config) error { return c.Model.check() },
			"llm: missing API key: set OPENAI_API_KEY to the key for https://api.openai.com/v1", llm.ErrMissingAPIKey},
		{"key unset for Azure", map[string]string{"OPENAI_BASE_URL": "https://acme.openai.azure.com", "DEEPRESEARCH_MODEL": "gpt-4o"}, func(c config) error { return c.Model.check() },
			"llm: missing API key: set OPENAI_API_KEY to the key for https://acme.openai.azure.com", llm.ErrMissingAPIKey},
		{"key set", map[string]string{"OPENAI_API_KEY": "sk-x"}, func(c config) error { return c.Model.check() }, "", nil},
		{"Ollama needs no key", map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1"}, func(c config) error { return c.Model.check() }, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := loadConfig(getenv(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			err = tc.check(c)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err == nil || err.Error() != tc.err {
				t.Fatalf("err = %v\nwant  %s", err, tc.err)
			}
			if tc.errIs != nil && !errors.Is(err, tc.errIs) {
				t.Errorf("err %v does not wrap %v", err, tc.errIs)
			}
		})
	}
}

// The llm client's errors tell the operator to fix the variables read here.
func TestLLMHintsNameTheVariables(t *testing.T) {
	for got, want := range map[string]string{
		llm.EnvAPIKey: envAPIKey, llm.EnvBaseURL: envBaseURL, llm.EnvModel: envModel,
		llm.EnvDeployments: envDeployments, llm.EnvTimeout: envTimeout,
	} {
		if got != want {
			t.Errorf("llm names %s, config reads %s", got, want)
		}
	}
	for _, r := range llm.Roles {
		if llm.RoleEnv(r) != roleEnv(r) {
			t.Errorf("role %s: llm names %s, config reads %s", r, llm.RoleEnv(r), roleEnv(r))
		}
	}
}

// serve's flags override the environment: -http (off disables) and
// -max-runs.
func TestServeFlagsOverrideConfig(t *testing.T) {
	e := getenv(map[string]string{"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1",
		"DEEPRESEARCH_HTTP_ADDR": ":7000", "DEEPRESEARCH_MAX_CONCURRENT_RUNS": "4"})
	c, err := loadServeConfig(nil, e, nil)
	if err != nil || c.HTTPAddr != ":7000" || c.MaxConcurrentRuns != 4 {
		t.Fatalf("env only: %+v, %v", c, err)
	}
	c, err = loadServeConfig([]string{"-http", "off", "-max-runs", "1"}, e, nil)
	if err != nil || c.HTTPAddr != "" || c.MaxConcurrentRuns != 1 {
		t.Fatalf("flags: %+v, %v", c, err)
	}
	if _, err := loadServeConfig(nil, getenv(map[string]string{"SLACK_APP_TOKEN": "xapp-1"}), nil); err == nil || !strings.HasPrefix(err.Error(), "SLACK_BOT_TOKEN: not set") {
		t.Errorf("without a bot token: %v", err)
	}
}
