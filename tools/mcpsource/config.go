// Package mcpsource makes MCP servers research sources: it reads the
// servers from the JSON file other MCP clients use
// (DEEPRESEARCH_MCP_CONFIG), connects to each (a command on stdio, or a
// streamable-HTTP URL), lists their tools and calls them for the agent
// (agent.ToolSource), under a per-call timeout, a result size cap and a
// per-run call limit. A server that is down costs only its own results; a
// crashed stdio server is started again on next use.
package mcpsource

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// Visibility says where a server's results may appear.
type Visibility string

// Visibilities.
const (
	// VisibilityAny: in any report.
	VisibilityAny Visibility = "any"
	// VisibilityChannels: only in reports posted in the listed channels.
	VisibilityChannels Visibility = "channels"
	// VisibilityPrivate: only in answers nobody but the requester sees
	// (a direct message, the assistant pane, the command line, an MCP
	// client). The default.
	VisibilityPrivate Visibility = "private"
)

// Settings are our own settings for a server, under its "deepresearch"
// key.
type Settings struct {
	// Tools the agent may call (empty: every tool the server lists).
	Tools      []string   `json:"tools,omitempty"`
	Visibility Visibility `json:"visibility,omitempty"`
	// Channels are the Slack channel ids of VisibilityChannels.
	Channels []string `json:"channels,omitempty"`
}

// Server is one entry of "mcpServers": a command (stdio) or a URL
// (streamable HTTP).
type Server struct {
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Deepresearch are our settings.
	Deepresearch Settings `json:"deepresearch"`
}

// Config is the servers by name.
type Config map[string]Server

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// ParseConfig reads the {"mcpServers": {...}} document. Values of env and
// headers may name environment variables as ${NAME}, so a token need not
// be written in the file.
func ParseConfig(data []byte) (Config, error) {
	var doc struct {
		MCPServers map[string]Server `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("mcpsource: config: %w", err)
	}
	var errs []error
	for name, s := range doc.MCPServers {
		if err := s.check(name); err != nil {
			errs = append(errs, err)
			continue
		}
		if s.Deepresearch.Visibility == "" {
			s.Deepresearch.Visibility = VisibilityPrivate
		}
		s.Env, s.Headers = expand(s.Env), expand(s.Headers)
		doc.MCPServers[name] = s
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return Config(doc.MCPServers), nil
}

// LoadConfig reads the file at path.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mcpsource: config: %w", err)
	}
	return ParseConfig(data)
}

func (s Server) check(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("mcpsource: server %q: names are 1-32 letters, digits, - or _", name)
	}
	if (s.Command == "") == (s.URL == "") {
		return fmt.Errorf("mcpsource: server %s: give either command (stdio) or url (streamable HTTP)", name)
	}
	if s.URL != "" && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
		return fmt.Errorf("mcpsource: server %s: url must be http:// or https://", name)
	}
	switch v := s.Deepresearch.Visibility; v {
	case "", VisibilityAny, VisibilityPrivate:
	case VisibilityChannels:
		if len(s.Deepresearch.Channels) == 0 {
			return fmt.Errorf("mcpsource: server %s: visibility %q needs channels", name, v)
		}
	default:
		return fmt.Errorf("mcpsource: server %s: visibility %q is not any, channels or private", name, v)
	}
	return nil
}

var envRefRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

func expand(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = envRefRE.ReplaceAllStringFunc(v, func(ref string) string {
			return os.Getenv(envRefRE.FindStringSubmatch(ref)[1])
		})
	}
	return out
}

// secrets are the values a server's settings hold that must never be
// logged: every env and header value.
func (s Server) secrets() []string {
	var out []string
	for _, m := range []map[string]string{s.Env, s.Headers} {
		for _, v := range m {
			if len(v) >= 4 {
				out = append(out, v)
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}
