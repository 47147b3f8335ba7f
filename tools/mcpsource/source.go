package mcpsource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deepresearch/agent"
	"deepresearch/redact"
)

// Options tune a Source. Zero values take the defaults.
type Options struct {
	Logger *slog.Logger
	// CallTimeout bounds one tool call (default 30s); ConnectTimeout a
	// connection with its first tool list (default 60s: a stdio server
	// run through a package runner may install itself first).
	CallTimeout    time.Duration
	ConnectTimeout time.Duration
	// MaxResultChars caps the text one call returns (default 50,000).
	MaxResultChars int
	// MaxCallsPerRun caps the tool calls of one run across all servers
	// (default 20).
	MaxCallsPerRun int
	// RetryAfter is how long a server that failed to connect is left
	// alone before it is tried again (default 30s).
	RetryAfter time.Duration
	// Transport makes a server's transport; nil: a command (stdio) or a
	// streamable-HTTP client, as configured. Tests pass in-memory ones.
	Transport func(name string, s Server) (mcp.Transport, error)
	Now       func() time.Time
}

// Errors.
var (
	// ErrNotAllowed refuses a tool whose results may not appear where the
	// report is seen, or one the configuration does not list.
	ErrNotAllowed = errors.New("mcpsource: tool not allowed here")
	// ErrCallLimit is returned once a run has made MaxCallsPerRun calls.
	ErrCallLimit = errors.New("mcpsource: the run's tool call limit is reached")
	// ErrUnknownTool names no tool of a configured server.
	ErrUnknownTool = errors.New("mcpsource: unknown tool")
)

// Source is the configured MCP servers as one agent.ToolSource. It is
// safe for concurrent use; one Source serves every run of a process.
type Source struct {
	o       Options
	log     *slog.Logger
	servers map[string]*server

	mu   sync.Mutex
	runs map[string]*runCalls
}

type runCalls struct {
	n    int
	last time.Time
}

var _ agent.ToolSource = (*Source)(nil)

// New returns a Source over cfg; it connects nothing until Start or the
// first use.
func New(cfg Config, o Options) *Source {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	def := func(p *time.Duration, v time.Duration) {
		if *p <= 0 {
			*p = v
		}
	}
	def(&o.CallTimeout, 30*time.Second)
	def(&o.ConnectTimeout, 60*time.Second)
	def(&o.RetryAfter, 30*time.Second)
	if o.MaxResultChars <= 0 {
		o.MaxResultChars = 50000
	}
	if o.MaxCallsPerRun <= 0 {
		o.MaxCallsPerRun = 20
	}
	s := &Source{o: o, log: o.Logger, servers: map[string]*server{}, runs: map[string]*runCalls{}}
	for name, c := range cfg {
		s.servers[name] = &server{name: name, cfg: c, src: s, secrets: c.secrets()}
	}
	return s
}

// Start connects every server at once and returns one error per server
// that could not be reached, naming it (the caller logs each in one
// line). Those servers are tried again on use.
func (s *Source) Start(ctx context.Context) []error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for _, sv := range s.sorted() {
		wg.Go(func() {
			if _, err := sv.session(ctx); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("mcp server %s could not be reached: %w", sv.name, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errs
}

// Close ends every session (a stdio server's process is stopped).
func (s *Source) Close() error {
	var errs []error
	for _, sv := range s.sorted() {
		sv.mu.Lock()
		cs := sv.sess
		sv.sess, sv.closed = nil, true
		sv.mu.Unlock()
		if cs != nil {
			if err := cs.Close(); err != nil {
				errs = append(errs, fmt.Errorf("mcp server %s: %w", sv.name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Names are the configured servers' names, sorted.
func (s *Source) Names() []string { return slices.Sorted(maps.Keys(s.servers)) }

func (s *Source) sorted() []*server {
	var out []*server
	for _, n := range s.Names() {
		out = append(out, s.servers[n])
	}
	return out
}

// Tools lists the tools of the servers whose results may appear where
// aud sees the report, connecting (or reconnecting) them as needed; the
// servers that could not be reached are named.
func (s *Source) Tools(ctx context.Context, aud agent.Audience) ([]agent.ExternalTool, []string) {
	var (
		mu    sync.Mutex
		tools = map[string][]agent.ExternalTool{}
		down  []string
		wg    sync.WaitGroup
	)
	for _, sv := range s.sorted() {
		if !sv.cfg.Deepresearch.visibleTo(aud) {
			continue
		}
		wg.Go(func() {
			ts, err := sv.listed(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if ctx.Err() == nil {
					down = append(down, sv.name)
				}
				return
			}
			tools[sv.name] = ts
		})
	}
	wg.Wait()
	var out []agent.ExternalTool
	for _, n := range slices.Sorted(maps.Keys(tools)) {
		out = append(out, tools[n]...)
	}
	slices.Sort(down)
	return out, down
}

// Call runs the tool the model named for run, as seen by aud.
func (s *Source) Call(ctx context.Context, run string, aud agent.Audience, name string, args json.RawMessage) ([]agent.ToolResult, error) {
	sv, t, err := s.allowedTool(ctx, aud, name)
	if err != nil {
		return nil, err
	}
	tool := t.Name
	if !s.take(run) {
		return nil, ErrCallLimit
	}
	var argv map[string]any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &argv); err != nil {
			return nil, fmt.Errorf("mcpsource: %s: arguments: %w", name, err)
		}
	}
	cs, err := sv.session(ctx)
	if err != nil {
		return nil, fmt.Errorf("mcp server %s: %w: %w", sv.name, agent.ErrSourceUnreachable, err)
	}
	cctx, cancel := context.WithTimeout(ctx, s.o.CallTimeout)
	defer cancel()
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: argv})
	if err != nil {
		return nil, sv.callError(ctx, cctx, cs, tool, err)
	}
	if res.IsError {
		return nil, fmt.Errorf("mcp server %s: tool %s failed: %s", sv.name, tool, clip(sv.scrub(contentText(res.Content)), 300))
	}
	return results(sv.name, tool, argv, res, s.o.MaxResultChars), nil
}

// allowedTool finds the tool named name and checks that aud may use it. A
// call chosen before this process knew the server's tools (a run carried
// on after a restart) lists them first.
func (s *Source) allowedTool(ctx context.Context, aud agent.Audience, name string) (*server, *mcp.Tool, error) {
	sv, t := s.resolve(name)
	if sv == nil {
		for _, c := range s.sorted() {
			if strings.HasPrefix(name, prefix(c.name)) && c.cfg.Deepresearch.visibleTo(aud) {
				_, _ = c.session(ctx) // lists the tools; a server that fails leaves the tool unknown below
			}
		}
		if sv, t = s.resolve(name); sv == nil {
			return nil, nil, fmt.Errorf("%w: %s", ErrUnknownTool, name)
		}
	}
	if !sv.cfg.Deepresearch.visibleTo(aud) || !sv.cfg.Deepresearch.allows(t) {
		return nil, nil, fmt.Errorf("%w: %s", ErrNotAllowed, name)
	}
	return sv, t, nil
}

// callError is the error of a failed tool call: the caller's context, the
// tool's JSON-RPC error, or the server unreachable (the broken connection
// dropped unless the call timed out).
func (sv *server) callError(ctx, cctx context.Context, cs *mcp.ClientSession, tool string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return fmt.Errorf("mcp server %s: tool %s: %s", sv.name, tool, sv.scrub(we.Message))
	}
	if cctx.Err() == nil {
		sv.drop(cs) // the connection broke: reconnect on next use
	}
	return fmt.Errorf("mcp server %s: %w: %s", sv.name, agent.ErrSourceUnreachable, sv.scrub(err.Error()))
}

// take counts one call of run; false once the run has made its share.
func (s *Source) take(run string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.o.Now()
	if len(s.runs) > 1000 {
		for k, r := range s.runs {
			if now.Sub(r.last) > 24*time.Hour {
				delete(s.runs, k)
			}
		}
	}
	r := s.runs[run]
	if r == nil {
		r = &runCalls{}
		s.runs[run] = r
	}
	r.last = now
	if r.n >= s.o.MaxCallsPerRun {
		return false
	}
	r.n++
	return true
}

// resolve finds the server and tool an exposed name stands for.
func (s *Source) resolve(name string) (*server, *mcp.Tool) {
	for _, sv := range s.sorted() {
		if !strings.HasPrefix(name, prefix(sv.name)) {
			continue
		}
		sv.mu.Lock()
		tools := sv.tools
		sv.mu.Unlock()
		for _, t := range tools {
			if exposed(sv.name, t.Name) == name {
				return sv, t
			}
		}
	}
	return nil, nil
}

func prefix(server string) string { return "mcp_" + server + "__" }

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// exposed is the function name the model sees for a server's tool:
// mcp_<server>__<tool>, within the 64 characters function names allow.
func exposed(server, tool string) string {
	n := prefix(server) + unsafeName.ReplaceAllString(tool, "_")
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

func (st Settings) visibleTo(aud agent.Audience) bool {
	switch st.Visibility {
	case VisibilityAny:
		return true
	case VisibilityChannels:
		return aud.Channel != "" && slices.Contains(st.Channels, aud.Channel)
	default:
		return aud.Private
	}
}

// allows reports whether the agent may call t: a tool the settings list,
// or, with no list, one the server marks read-only (annotations'
// readOnlyHint). Research reads: a tool that may change the team's
// systems (write_file, create_issue) is never offered unless named, since
// the model choosing its arguments reads untrusted pages.
func (st Settings) allows(t *mcp.Tool) bool {
	if len(st.Tools) > 0 {
		return slices.Contains(st.Tools, t.Name)
	}
	return t.Annotations != nil && t.Annotations.ReadOnlyHint
}

// server is one configured server and its session.
type server struct {
	name    string
	cfg     Server
	src     *Source
	secrets []string

	mu         sync.Mutex
	sess       *mcp.ClientSession
	tools      []*mcp.Tool
	stale      bool // the server announced a changed tool list
	failedAt   time.Time
	err        error
	connecting chan struct{} // open while a connection is being made
	closed     bool
}

// session returns the server's session, connecting when there is none
// (first use, after a crash) unless the last attempt failed recently.
func (sv *server) session(ctx context.Context) (*mcp.ClientSession, error) {
	for {
		sv.mu.Lock()
		switch {
		case sv.closed:
			sv.mu.Unlock()
			return nil, errors.New("closed")
		case sv.sess != nil:
			cs := sv.sess
			sv.mu.Unlock()
			return cs, nil
		case sv.connecting != nil:
			ch := sv.connecting
			sv.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		case sv.err != nil && sv.src.o.Now().Sub(sv.failedAt) < sv.src.o.RetryAfter:
			err := sv.err
			sv.mu.Unlock()
			return nil, err
		}
		ch := make(chan struct{})
		sv.connecting = ch
		sv.mu.Unlock()
		cs, tools, err := sv.connect(ctx)
		sv.mu.Lock()
		sv.connecting = nil
		close(ch)
		if err != nil {
			sv.err, sv.failedAt = err, sv.src.o.Now()
			sv.mu.Unlock()
			return nil, err
		}
		if sv.closed {
			sv.mu.Unlock()
			_ = cs.Close()
			return nil, errors.New("closed")
		}
		sv.sess, sv.tools, sv.stale, sv.err = cs, tools, false, nil
		sv.mu.Unlock()
		return cs, nil
	}
}

func (sv *server) connect(ctx context.Context) (*mcp.ClientSession, []*mcp.Tool, error) {
	tr, err := sv.transport()
	if err != nil {
		return nil, nil, errors.New(sv.scrub(err.Error()))
	}
	var cs *mcp.ClientSession
	client := mcp.NewClient(&mcp.Implementation{Name: "deepresearch", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { sv.markStale() },
	})
	cctx, cancel := context.WithTimeout(ctx, sv.src.o.ConnectTimeout)
	defer cancel()
	cs, err = client.Connect(cctx, tr, nil)
	if err != nil {
		return nil, nil, errors.New(sv.scrub(err.Error()))
	}
	tools, err := listTools(cctx, cs)
	if err != nil {
		_ = cs.Close()
		return nil, nil, errors.New(sv.scrub(err.Error()))
	}
	go func() {
		err := cs.Wait()
		sv.mu.Lock()
		mine := sv.sess == cs
		if mine {
			sv.sess = nil // the tool list is kept: calls reconnect
		}
		closed := sv.closed
		sv.mu.Unlock()
		if mine && !closed {
			sv.src.log.Warn("mcp server disconnected; it is reconnected on next use", "server", sv.name, "err", scrubErr(sv, err))
		}
	}()
	sv.src.log.Info("mcp server connected", "server", sv.name, "tools", len(tools))
	return cs, tools, nil
}

func scrubErr(sv *server, err error) string {
	if err == nil {
		return ""
	}
	return sv.scrub(err.Error())
}

func listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var out []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func (sv *server) markStale() {
	sv.mu.Lock()
	sv.stale = true
	sv.mu.Unlock()
}

// drop forgets a session whose connection broke.
func (sv *server) drop(cs *mcp.ClientSession) {
	sv.mu.Lock()
	mine := sv.sess == cs
	if mine {
		sv.sess = nil
	}
	sv.mu.Unlock()
	if mine {
		_ = cs.Close()
	}
}

// listed is the server's allowed tools as agent tools, refreshing the
// list when the server announced a change.
func (sv *server) listed(ctx context.Context) ([]agent.ExternalTool, error) {
	cs, err := sv.session(ctx)
	if err != nil {
		return nil, err
	}
	sv.mu.Lock()
	stale, tools := sv.stale, sv.tools
	sv.mu.Unlock()
	if stale {
		lctx, cancel := context.WithTimeout(ctx, sv.src.o.CallTimeout)
		fresh, err := listTools(lctx, cs)
		cancel()
		if err != nil {
			return nil, err
		}
		sv.mu.Lock()
		if sv.sess == cs {
			sv.tools, sv.stale = fresh, false
		}
		sv.mu.Unlock()
		tools = fresh
	}
	var out []agent.ExternalTool
	for _, t := range tools {
		if !sv.cfg.Deepresearch.allows(t) {
			continue
		}
		var schema json.RawMessage
		if t.InputSchema != nil {
			schema, _ = json.Marshal(t.InputSchema)
		}
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		out = append(out, agent.ExternalTool{Name: exposed(sv.name, t.Name), Source: sv.name, Description: desc, Schema: schema})
	}
	return out, nil
}

func (sv *server) transport() (mcp.Transport, error) {
	if f := sv.src.o.Transport; f != nil {
		return f(sv.name, sv.cfg)
	}
	c := sv.cfg
	if c.URL != "" {
		return &mcp.StreamableClientTransport{Endpoint: c.URL, HTTPClient: &http.Client{Transport: headerTransport{c.Headers, http.DefaultTransport}}}, nil
	}
	cmd := exec.Command(c.Command, c.Args...)
	cmd.Env = childEnv(c.Env)
	cmd.Stderr = &lineLogger{sv: sv}
	return &mcp.CommandTransport{Command: cmd}, nil
}

// childEnv is a stdio server's environment: what a program needs to run
// (PATH, HOME, locale, temp dir) and the configured variables, never the
// rest of ours (model and Slack credentials).
func childEnv(extra map[string]string) []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER", "NODE_PATH", "npm_config_cache"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		env = append(env, k+"="+extra[k])
	}
	return env
}

type headerTransport struct {
	h    map[string]string
	next http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header.Set(k, v)
	}
	return t.next.RoundTrip(r)
}

// scrub removes the server's secrets (env and header values, URL
// credentials) from text that is logged or shown.
func (sv *server) scrub(s string) string {
	s = redact.Text(s, sv.secrets...)
	if sv.cfg.URL != "" {
		s = redact.Text(s, redact.Secrets(sv.cfg.URL)...)
	}
	return s
}

// lineLogger logs a stdio server's stderr, a line at a time, scrubbed.
type lineLogger struct {
	sv  *server
	mu  sync.Mutex
	buf []byte
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := slices.Index(l.buf, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimSpace(string(l.buf[:i]))
		l.buf = l.buf[i+1:]
		if line != "" {
			l.sv.src.log.Debug("mcp server stderr", "server", l.sv.name, "line", clip(clean(l.sv.scrub(line)), 500))
		}
	}
	if len(l.buf) > 4096 {
		l.buf = l.buf[:0]
	}
	return len(p), nil
}

// results turns a tool's result into documents: each embedded resource is
// one (cited by its URI); the text parts are one more, cited by the first
// resource_link's URI when there is one, else by mcp://server/tool?args.
func results(server, tool string, args map[string]any, res *mcp.CallToolResult, limit int) []agent.ToolResult {
	b := &runeBudget{left: limit}
	out, texts, link := contentParts(server, res.Content, b)
	if len(texts) == 0 && res.StructuredContent != nil {
		if js, err := json.MarshalIndent(res.StructuredContent, "", "  "); err == nil {
			texts = append(texts, string(js))
		}
	}
	text := strings.TrimSpace(strings.Join(texts, "\n\n"))
	if text == "" || b.left <= 0 {
		return out
	}
	r := agent.ToolResult{URL: callURL(server, tool, args), Title: server + ": " + tool, Text: b.take(text)}
	if link != nil && link.URI != "" {
		r.URL = resourceURL(server, link.URI)
		if r.Title = link.Title; r.Title == "" {
			r.Title = link.Name
		}
	}
	if title := argTitle(args); title != "" && link == nil {
		r.Title = server + ": " + title
	}
	return append([]agent.ToolResult{r}, out...)
}

// runeBudget is how many runes of text a tool's result may still carry.
type runeBudget struct{ left int }

// take is s cleaned and cut to the runes left, which it uses up.
func (b *runeBudget) take(s string) string {
	s = clean(s)
	if len([]rune(s)) > b.left {
		s = string([]rune(s)[:b.left])
	}
	b.left -= len([]rune(s))
	return s
}

// contentParts sorts a result's content: embedded resources with text
// become documents (while the budget lasts), text parts are collected,
// and the first resource link is kept.
func contentParts(server string, content []mcp.Content, b *runeBudget) (out []agent.ToolResult, texts []string, link *mcp.ResourceLink) {
	for _, c := range content {
		switch c := c.(type) {
		case *mcp.TextContent:
			texts = append(texts, c.Text)
		case *mcp.EmbeddedResource:
			if r := c.Resource; r != nil && strings.TrimSpace(r.Text) != "" && b.left > 0 {
				out = append(out, agent.ToolResult{URL: resourceURL(server, r.URI), Title: resourceTitle(r.URI), Text: b.take(r.Text)})
			}
		case *mcp.ResourceLink:
			if link == nil {
				link = c
			}
		}
	}
	return out, texts, link
}

// resourceURL is the reference a resource is cited by: its URI when the
// report can show it as a link (http, https, file), else an mcp:// URL
// naming the server and the URI.
func resourceURL(server, uri string) string {
	u, err := url.Parse(uri)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https" || u.Scheme == "file") {
		return uri
	}
	return "mcp://" + server + "/resource?" + url.Values{"uri": {uri}}.Encode()
}

func resourceTitle(uri string) string {
	if i := strings.LastIndex(uri, "/"); i >= 0 && i < len(uri)-1 {
		return uri[i+1:]
	}
	return uri
}

// callURL cites a call by its server, tool and arguments.
func callURL(server, tool string, args map[string]any) string {
	v := url.Values{}
	for k, a := range args {
		switch a := a.(type) {
		case string:
			v.Set(k, a)
		default:
			b, _ := json.Marshal(a)
			v.Set(k, string(b))
		}
	}
	u := "mcp://" + server + "/" + url.PathEscape(tool)
	if enc := v.Encode(); enc != "" {
		u += "?" + enc
	}
	return u
}

// argTitle is a short label from the arguments (a path, a query), for the
// document's title.
func argTitle(args map[string]any) string {
	if p, ok := args["path"].(string); ok && strings.Trim(p, "/") != "" {
		return clip(path.Base(p), 80) // a file: its name
	}
	for _, k := range []string{"query", "q", "id", "name", "url"} {
		if s, ok := args[k].(string); ok && s != "" {
			return clip(s, 80)
		}
	}
	return ""
}

func contentText(cs []mcp.Content) string {
	var parts []string
	for _, c := range cs {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, " ")
}

// clean drops control characters (other than newlines and tabs) so a
// server's text never reaches a terminal or a message as escape codes.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unicode.IsControl(r) && r != '\u2028' && r != '\u2029' {
			return r
		}
		return -1
	}, s)
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
