// Package slackfake is an in-memory fake of Slack that the real slack-go client
// talks to unchanged: the Web API over HTTP (form-encoded and JSON bodies,
// bearer or form tokens, Slack's {"ok":false,"error":...} answers, 429 with
// Retry-After) and Socket Mode (apps.connections.open, a WebSocket with hello,
// envelopes, acks, pings and disconnect requests).
//
// Point a client at it with
//
//	api := slack.New(slackfake.DefaultBotToken,
//		slack.OptionAPIURL(fake.APIURL()),
//		slack.OptionAppLevelToken(slackfake.DefaultAppToken))
//	sm := socketmode.New(api)
//
// Tests drive Slack's side with the Send* methods (events_api, interactive and
// slash_commands envelopes), inject faults with InjectFault, enforce Slack's
// rate limits with WithTierLimits (off by default), and inspect what
// the bot did with Messages, Thread, Files, Views, Ephemerals, Acks, Statuses
// and Calls. Every method of Server is safe for concurrent use.
package slackfake

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Default identities of the fake workspace. Override them with options.
const (
	DefaultBotToken   = "xoxb-0000000001-0000000002-slackfakebottoken"
	DefaultAppToken   = "xapp-1-A0FAKEAPP01-0000000003-slackfakeapptoken"
	DefaultTeamID     = "T0FAKETEAM1"
	DefaultTeamDomain = "fake"
	DefaultAppID      = "A0FAKEAPP01"
	DefaultBotUserID  = "U0FAKEBOT01"
	DefaultBotID      = "B0FAKEBOT01"
	DefaultBotName    = "deepresearch"
	DefaultTZ         = "Asia/Tokyo"
)

// ErrClosed is returned by operations on a closed Server.
var ErrClosed = errors.New("slackfake: server closed")

// ErrNoConnection is returned when an envelope cannot be delivered because no
// Socket Mode connection is open before the context ends.
var ErrNoConnection = errors.New("slackfake: no open socket mode connection")

type config struct {
	botToken       string
	appToken       string
	teamID         string
	teamDomain     string
	appID          string
	botUserID      string
	botID          string
	botName        string
	defaultTZ      string
	logger         *slog.Logger
	pingInterval   time.Duration
	redeliverAfter time.Duration
	maxRetries     int
	triggerTTL     time.Duration
	seed           uint64
	echoBot        bool
	limits         *Limits
	noStreaming    string // the error the streaming methods answer ("": they work)
}

func defaultConfig() config {
	return config{
		botToken:     DefaultBotToken,
		appToken:     DefaultAppToken,
		teamID:       DefaultTeamID,
		teamDomain:   DefaultTeamDomain,
		appID:        DefaultAppID,
		botUserID:    DefaultBotUserID,
		botID:        DefaultBotID,
		botName:      DefaultBotName,
		defaultTZ:    DefaultTZ,
		pingInterval: 5 * time.Second,
		maxRetries:   3,
		triggerTTL:   3 * time.Second,
		seed:         1,
	}
}

// Option configures a Server.
type Option func(*config)

// WithTokens sets the accepted bot (xoxb-) and app-level (xapp-) tokens.
func WithTokens(bot, app string) Option {
	return func(c *config) { c.botToken, c.appToken = bot, app }
}

// WithTeam sets the workspace id and domain.
func WithTeam(id, domain string) Option {
	return func(c *config) { c.teamID, c.teamDomain = id, domain }
}

// WithBot sets the app id, the bot's user id, bot id and name (as auth.test reports them).
func WithBot(appID, userID, botID, name string) Option {
	return func(c *config) { c.appID, c.botUserID, c.botID, c.botName = appID, userID, botID, name }
}

// WithLogger sets the logger; the default discards.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithPingInterval sets how often the server sends WebSocket pings on every
// connection (default 5s; slack-go's client drops a connection that has not
// been pinged for 30s). Zero or negative disables pings.
func WithPingInterval(d time.Duration) Option { return func(c *config) { c.pingInterval = d } }

// WithRedelivery makes the server redeliver an envelope that is not acked
// within after, with retry_attempt+1 and retry_reason "timeout", at most
// maxRetries times (Slack: 3). Zero after disables redelivery (the default).
func WithRedelivery(after time.Duration, maxRetries int) Option {
	return func(c *config) { c.redeliverAfter, c.maxRetries = after, maxRetries }
}

// WithTriggerTTL sets how long a trigger_id stays valid for views.open
// (Slack: 3s, the default). Zero or negative disables the expiry check.
func WithTriggerTTL(d time.Duration) Option { return func(c *config) { c.triggerTTL = d } }

// WithSeed seeds the random choices (fault rates).
func WithSeed(seed uint64) Option { return func(c *config) { c.seed = seed } }

// WithDefaultTZ sets the time zone of users the fake learns from events.
func WithDefaultTZ(tz string) Option { return func(c *config) { c.defaultTZ = tz } }

// WithEchoBotMessages makes every message the bot posts with chat.postMessage
// come back as a message event (with bot_id) over Socket Mode, as Slack does
// for apps subscribed to message.* events. Bots must ignore their own echoes.
func WithEchoBotMessages(on bool) Option { return func(c *config) { c.echoBot = on } }

// Server is a fake Slack workspace. Create it with New or Start and Close it.
type Server struct {
	cfg      config
	log      *slog.Logger
	baseURL  string
	ts       *httptest.Server
	hs       *http.Server
	upgrader websocket.Upgrader

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	changed chan struct{}
	rng     *mrand.Rand
	seq     uint64
	lastTS  int64

	// Socket Mode
	tickets   map[string]string // ticket -> connection id
	conns     map[string]*wsConn
	connOrder []string
	connSeen  int
	rr        int
	envs      map[string]*envelopeState
	envOrder  []string
	acks      []Ack
	redeliver time.Duration
	maxRetry  int

	// Web API
	calls        []Call
	faults       map[string][]*faultState
	channels     map[string]*channelState
	chanOrder    []string
	users        map[string]User
	files        map[string]*fileState
	fileOrder    []string
	uploads      map[string]string      // upload key -> file id
	deletedFiles map[string]bool        // ids of files deleted with files.delete
	streams      []*Stream              // chat.startStream messages, in order
	actionTokens map[string]actionToken // action_token of users' message events
	views        map[string]*viewState
	viewOrder    []string
	homeViews    map[string]string // user id -> view id
	ephemerals   []Ephemeral
	statuses     []Status
	prompts      []SuggestedPrompts
	titles       []Title
	assistantTS  map[string]bool // channel + "/" + thread_ts of assistant threads started
	responses    []ResponsePost
	respURLs     map[string]responseTarget
	triggers     map[string]triggerState
	unknown      []string
	handlers     map[string]apiHandler
	limits       *tierLimits // nil: no rate limits enforced
}

// New starts a Server on a loopback port using httptest.
func New(opts ...Option) *Server {
	s := newServer(opts)
	s.ts = httptest.NewServer(s.routes())
	s.baseURL = s.ts.URL
	s.start()
	return s
}

// Start serves a Server on addr ("127.0.0.1:0" picks a free port) until Close,
// for use from a separate process (see cmd/slackfake).
func Start(addr string, opts ...Option) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("slackfake: listen %s: %w", addr, err)
	}
	s := newServer(opts)
	s.hs = &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second}
	s.baseURL = "http://" + ln.Addr().String()
	s.wg.Go(func() {
		if err := s.hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("slackfake: serve", "err", err)
		}
	})
	s.start()
	return s, nil
}

func newServer(opts []Option) *Server {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg:          cfg,
		log:          cfg.logger,
		ctx:          ctx,
		cancel:       cancel,
		changed:      make(chan struct{}),
		rng:          mrand.New(mrand.NewPCG(cfg.seed, cfg.seed^0x9e3779b97f4a7c15)),
		tickets:      map[string]string{},
		conns:        map[string]*wsConn{},
		envs:         map[string]*envelopeState{},
		redeliver:    cfg.redeliverAfter,
		maxRetry:     cfg.maxRetries,
		faults:       map[string][]*faultState{},
		channels:     map[string]*channelState{},
		users:        map[string]User{},
		files:        map[string]*fileState{},
		uploads:      map[string]string{},
		deletedFiles: map[string]bool{},
		actionTokens: map[string]actionToken{},
		views:        map[string]*viewState{},
		homeViews:    map[string]string{},
		assistantTS:  map[string]bool{},
		respURLs:     map[string]responseTarget{},
		triggers:     map[string]triggerState{},
		limits:       newTierLimits(cfg.limits),
	}
	s.upgrader = websocket.Upgrader{
		HandshakeTimeout: 10 * time.Second,
		// slack-go sends Origin: https://api.slack.com.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	s.users[cfg.botUserID] = User{ID: cfg.botUserID, Name: cfg.botName, RealName: cfg.botName, IsBot: true, TZ: cfg.defaultTZ}
	s.handlers = s.apiHandlers()
	return s
}

func (s *Server) start() {
	s.wg.Go(s.redeliveryLoop)
}

// URL is the server's base URL, e.g. http://127.0.0.1:40123.
func (s *Server) URL() string { return s.baseURL }

// APIURL is the Web API base for slack.OptionAPIURL: URL()+"/api/".
func (s *Server) APIURL() string { return s.baseURL + "/api/" }

// BotToken is the accepted bot token.
func (s *Server) BotToken() string { return s.cfg.botToken }

// AppToken is the accepted app-level token.
func (s *Server) AppToken() string { return s.cfg.appToken }

// BotUserID is the bot's user id (what auth.test reports as user_id).
func (s *Server) BotUserID() string { return s.cfg.botUserID }

// TeamID is the workspace id.
func (s *Server) TeamID() string { return s.cfg.teamID }

// AppID is the app id.
func (s *Server) AppID() string { return s.cfg.appID }

// Close closes every WebSocket connection, stops the background goroutines and
// the HTTP server. It is safe to call more than once.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	conns := make([]*wsConn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.notifyLocked()
	s.mu.Unlock()

	s.cancel()
	for _, c := range conns {
		c.close(websocket.CloseGoingAway, "server closing")
	}
	if s.ts != nil {
		s.ts.CloseClientConnections()
		s.ts.Close()
	}
	if s.hs != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := s.hs.Shutdown(ctx); err != nil {
			_ = s.hs.Close()
		}
		cancel()
	}
	s.wg.Wait()
}

// Wait blocks until cond returns true or ctx ends. cond is evaluated again
// after every change of the server's state (connections, acks, API calls), so
// it may call any inspection method.
func (s *Server) Wait(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ch := s.changed
		closed := s.closed
		s.mu.Unlock()
		if cond() {
			return nil
		}
		if closed {
			return ErrClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("slackfake: wait: %w", ctx.Err())
		}
	}
}

// notifyLocked wakes every Wait. s.mu must be held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// nextIDLocked returns prefix followed by a fresh upper-case id.
func (s *Server) nextIDLocked(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s%09X", prefix, s.seq)
}

// nextTSLocked returns a fresh, strictly increasing Slack timestamp.
func (s *Server) nextTSLocked() string {
	now := time.Now().UnixMicro()
	if now <= s.lastTS {
		now = s.lastTS + 1
	}
	s.lastTS = now
	return fmt.Sprintf("%d.%06d", now/1e6, now%1e6)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func newUUID() string {
	h := randomHex(16)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.handleAPI)
	mux.HandleFunc("/link/", s.handleLink)
	mux.HandleFunc("/upload/v1/", s.handleUpload)
	mux.HandleFunc("/files/", s.handleFileDownload)
	mux.HandleFunc("/response/", s.handleResponseURL)
	mux.HandleFunc("/_fake/", s.handleAdmin)
	return mux
}

// tokenKind classifies a presented token: "bot", "app", "invalid" or "none".
func (s *Server) tokenKind(tok string) string {
	switch tok {
	case "":
		return "none"
	case s.cfg.botToken:
		return "bot"
	case s.cfg.appToken:
		return "app"
	}
	return "invalid"
}
