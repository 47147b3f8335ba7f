package slackfake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Disconnect reasons Slack sends in a {"type":"disconnect"} message.
const (
	ReasonRefreshRequested = "refresh_requested"
	ReasonWarning          = "warning"
	ReasonLinkDisabled     = "link_disabled"
)

// maxResponseSize is Slack's limit for a Socket Mode response frame.
const maxResponseSize = 20 * 1024

// Envelope types.
const (
	TypeEventsAPI     = "events_api"
	TypeInteractive   = "interactive"
	TypeSlashCommands = "slash_commands"
)

// Conn describes an open Socket Mode connection.
type Conn struct {
	ID        string
	OpenedAt  time.Time
	PingsSent int
	Pongs     int // pongs received for our pings
	LastPong  time.Time
	Delivered int  // envelopes (including redeliveries) sent on it
	Draining  bool // told to disconnect (not "warning"); gets no more envelopes
}

// Ack is one acknowledgement received from a client.
type Ack struct {
	EnvelopeID string
	Type       string // envelope type; "" when the envelope is unknown
	ConnID     string
	Payload    json.RawMessage // the ack's payload, if any
	At         time.Time
	Attempt    int           // retry_attempt of the delivery it answers
	Latency    time.Duration // At minus the send time of the latest delivery before it
	Duplicate  bool          // not the first ack of this envelope
}

// Delivery is one send of an envelope on a connection.
type Delivery struct {
	ConnID  string
	Attempt int
	Reason  string
	SentAt  time.Time
}

// Envelope is an envelope the server sent, with its deliveries and first ack.
type Envelope struct {
	ID                     string
	Type                   string
	Payload                json.RawMessage
	AcceptsResponsePayload bool
	Deliveries             []Delivery
	Acked                  bool
	Ack                    Ack
}

type envelopeState struct {
	env      Envelope
	inFlight bool
}

type wsConn struct {
	id     string
	ws     *websocket.Conn
	opened time.Time
	wmu    sync.Mutex
	done   chan struct{}
	once   sync.Once

	// guarded by Server.mu
	pingsSent int
	pongs     int
	lastPong  time.Time
	delivered int
	draining  bool
}

func (c *wsConn) writeJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("slackfake: marshal frame: %w", err)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return fmt.Errorf("slackfake: set write deadline: %w", err)
	}
	if err := c.ws.WriteMessage(websocket.TextMessage, b); err != nil {
		return fmt.Errorf("slackfake: write to %s: %w", c.id, err)
	}
	return nil
}

// close sends a close frame (best effort) and closes the socket.
func (c *wsConn) close(code int, text string) {
	c.once.Do(func() {
		close(c.done)
		if code != 0 {
			_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
		}
		_ = c.ws.Close()
	})
}

// apps.connections.open
func (s *Server) appsConnectionsOpen(r *apiRequest) apiResult {
	s.mu.Lock()
	s.connSeen++
	connID := fmt.Sprintf("conn-%d", s.connSeen)
	ticket := newUUID()
	s.tickets[ticket] = connID
	s.mu.Unlock()
	wsURL := "ws" + s.baseURL[len("http"):] + "/link/?ticket=" + ticket + "&app_id=" + s.cfg.appID
	return ok(map[string]any{"url": wsURL})
}

// handleLink serves the Socket Mode WebSocket.
func (s *Server) handleLink(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	s.mu.Lock()
	connID, known := s.tickets[ticket]
	delete(s.tickets, ticket) // a ticket is good for one connection
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "closed", http.StatusServiceUnavailable)
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	if !known {
		http.Error(w, "invalid or used ticket", http.StatusUnauthorized)
		return
	}
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		s.log.Warn("slackfake: websocket upgrade", "err", err)
		return
	}
	c := &wsConn{id: connID, ws: ws, opened: time.Now(), done: make(chan struct{})}
	ws.SetPongHandler(func(string) error {
		s.mu.Lock()
		c.pongs++
		c.lastPong = time.Now()
		s.notifyLocked()
		s.mu.Unlock()
		return nil
	})

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.close(websocket.CloseGoingAway, "server closing")
		return
	}
	s.conns[c.id] = c
	s.connOrder = append(s.connOrder, c.id)
	n := len(s.conns)
	s.notifyLocked()
	s.mu.Unlock()
	s.log.Debug("slackfake: connection opened", "conn", c.id, "num_connections", n)

	hello := map[string]any{
		"type":            "hello",
		"num_connections": n,
		"debug_info": map[string]any{
			"host":                        "slackfake-" + c.id,
			"build_number":                1,
			"approximate_connection_time": 18060,
		},
		"connection_info": map[string]any{"app_id": s.cfg.appID},
	}
	if err := c.writeJSON(hello); err != nil {
		s.log.Warn("slackfake: hello", "conn", c.id, "err", err)
	}

	if d := s.cfg.pingInterval; d > 0 {
		s.wg.Go(func() { s.pingLoop(c, d) })
	}
	s.readLoop(c)
	c.close(websocket.CloseNormalClosure, "")
	s.removeConn(c.id)
}

func (s *Server) removeConn(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.conns[id]; !ok {
		return
	}
	delete(s.conns, id)
	for i, cid := range s.connOrder {
		if cid == id {
			s.connOrder = append(s.connOrder[:i], s.connOrder[i+1:]...)
			break
		}
	}
	s.notifyLocked()
	s.log.Debug("slackfake: connection closed", "conn", id)
}

func (s *Server) pingLoop(c *wsConn, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-s.ctx.Done():
			return
		case <-t.C:
			if err := s.pingConn(c); err != nil {
				return
			}
		}
	}
}

func (s *Server) pingConn(c *wsConn) error {
	if err := c.ws.WriteControl(websocket.PingMessage, []byte("slackfake"), time.Now().Add(5*time.Second)); err != nil {
		return fmt.Errorf("slackfake: ping %s: %w", c.id, err)
	}
	s.mu.Lock()
	c.pingsSent++
	s.mu.Unlock()
	return nil
}

// readLoop reads acks until the connection fails. Client pings are answered
// by gorilla's default ping handler.
func (s *Server) readLoop(c *wsConn) {
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		var m struct {
			EnvelopeID string          `json:"envelope_id"`
			Payload    json.RawMessage `json:"payload"`
		}
		if len(data) > maxResponseSize {
			// Slack silently drops responses of 20KB or more.
			s.log.Warn("slackfake: dropped oversized response", "conn", c.id, "bytes", len(data))
			continue
		}
		if err := json.Unmarshal(data, &m); err != nil || m.EnvelopeID == "" {
			s.log.Warn("slackfake: unexpected frame from client", "conn", c.id, "frame", string(data))
			continue
		}
		s.recordAck(c.id, m.EnvelopeID, m.Payload, time.Now())
	}
}

func (s *Server) recordAck(connID, envID string, payload json.RawMessage, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := Ack{EnvelopeID: envID, ConnID: connID, Payload: payload, At: at}
	if st, ok := s.envs[envID]; ok {
		a.Type = st.env.Type
		for i := len(st.env.Deliveries) - 1; i >= 0; i-- {
			if d := st.env.Deliveries[i]; !d.SentAt.After(at) {
				a.Attempt = d.Attempt
				a.Latency = at.Sub(d.SentAt)
				break
			}
		}
		if st.env.Acked {
			a.Duplicate = true
		} else {
			st.env.Acked = true
			st.env.Ack = a
		}
	}
	s.acks = append(s.acks, a)
	s.notifyLocked()
}

// WaitConnections waits until at least n Socket Mode connections are open.
func (s *Server) WaitConnections(ctx context.Context, n int) error {
	return s.Wait(ctx, func() bool { return len(s.Connections()) >= n })
}

// Connections lists the open Socket Mode connections, oldest first.
func (s *Server) Connections() []Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Conn, 0, len(s.connOrder))
	for _, id := range s.connOrder {
		c := s.conns[id]
		out = append(out, Conn{ID: c.id, OpenedAt: c.opened, PingsSent: c.pingsSent, Pongs: c.pongs, LastPong: c.lastPong, Delivered: c.delivered, Draining: c.draining})
	}
	return out
}

// Ping sends a WebSocket ping on the connection now.
func (s *Server) Ping(connID string) error {
	c, err := s.conn(connID)
	if err != nil {
		return err
	}
	return s.pingConn(c)
}

func (s *Server) conn(id string) (*wsConn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.conns[id]
	if !ok {
		return nil, fmt.Errorf("slackfake: connection %q: %w", id, ErrNoConnection)
	}
	return c, nil
}

func (s *Server) disconnectFrame(reason string) map[string]any {
	return map[string]any{
		"type":       "disconnect",
		"reason":     reason,
		"debug_info": map[string]any{"host": "slackfake"},
	}
}

// Disconnect sends {"type":"disconnect","reason":reason} on one connection.
// The connection stays open until the client closes it, as with Slack, but
// unless the reason is "warning" it gets no more envelopes.
func (s *Server) Disconnect(connID, reason string) error {
	c, err := s.conn(connID)
	if err != nil {
		return err
	}
	if reason != ReasonWarning {
		s.mu.Lock()
		c.draining = true
		s.mu.Unlock()
	}
	return c.writeJSON(s.disconnectFrame(reason))
}

// DisconnectAll sends a disconnect message on every open connection and
// returns how many were told.
func (s *Server) DisconnectAll(reason string) int {
	n := 0
	for _, c := range s.Connections() {
		if s.Disconnect(c.ID, reason) == nil {
			n++
		}
	}
	return n
}

// DropConnection closes a connection abruptly, without a disconnect message
// or close frame (a network failure).
func (s *Server) DropConnection(connID string) error {
	c, err := s.conn(connID)
	if err != nil {
		return err
	}
	c.close(0, "")
	return nil
}

// SendEnvelope delivers an envelope of the given type (events_api,
// interactive, slash_commands) with payload (any JSON-marshalable value) to
// one open connection, chosen round-robin. If no connection is open it waits
// for one until ctx ends. It returns the envelope id.
func (s *Server) SendEnvelope(ctx context.Context, typ string, payload any, acceptsResponsePayload bool) (string, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return "", fmt.Errorf("slackfake: marshal payload: %w", err)
	}
	id := newUUID()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return "", ErrClosed
	}
	s.envs[id] = &envelopeState{env: Envelope{ID: id, Type: typ, Payload: raw, AcceptsResponsePayload: acceptsResponsePayload}}
	s.envOrder = append(s.envOrder, id)
	s.mu.Unlock()
	if err := s.deliver(ctx, id, 0, ""); err != nil {
		return id, err
	}
	return id, nil
}

// Redeliver sends an envelope again with the next retry_attempt and the given
// retry_reason, as Slack does when it did not get an ack in time.
func (s *Server) Redeliver(ctx context.Context, envelopeID, reason string) error {
	s.mu.Lock()
	st, ok := s.envs[envelopeID]
	if !ok {
		s.mu.Unlock()
		return fmt.Errorf("slackfake: unknown envelope %q", envelopeID)
	}
	attempt := len(st.env.Deliveries)
	s.mu.Unlock()
	return s.deliver(ctx, envelopeID, attempt, reason)
}

// deliver sends one attempt of an envelope to one connection (round-robin),
// trying other connections if a write fails and waiting for a connection if
// none is open.
func (s *Server) deliver(ctx context.Context, id string, attempt int, reason string) error {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return ErrClosed
		}
		st := s.envs[id]
		var c *wsConn
		n := len(s.connOrder)
		for i := 1; i <= n; i++ {
			cand := s.conns[s.connOrder[(s.rr+i)%n]]
			if !cand.draining {
				s.rr = (s.rr + i) % n
				c = cand
				break
			}
		}
		ch := s.changed
		if c == nil {
			s.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return fmt.Errorf("slackfake: deliver %s: %w (%w)", id, ErrNoConnection, ctx.Err())
			}
		}
		frame := map[string]any{
			"envelope_id":              id,
			"type":                     st.env.Type,
			"payload":                  st.env.Payload,
			"accepts_response_payload": st.env.AcceptsResponsePayload,
			"retry_attempt":            attempt,
			"retry_reason":             reason,
		}
		d := Delivery{ConnID: c.id, Attempt: attempt, Reason: reason, SentAt: time.Now()}
		st.env.Deliveries = append(st.env.Deliveries, d)
		c.delivered++
		s.mu.Unlock()

		err := c.writeJSON(frame)
		if err == nil {
			s.mu.Lock()
			s.notifyLocked()
			s.mu.Unlock()
			return nil
		}
		s.log.Warn("slackfake: delivery failed, dropping connection", "conn", c.id, "envelope", id, "err", err)
		s.mu.Lock()
		// Forget the failed delivery; it never reached the client.
		for i := len(st.env.Deliveries) - 1; i >= 0; i-- {
			if st.env.Deliveries[i] == d {
				st.env.Deliveries = append(st.env.Deliveries[:i], st.env.Deliveries[i+1:]...)
				break
			}
		}
		s.mu.Unlock()
		c.close(0, "")
		s.removeConn(c.id)
		if ctx.Err() != nil {
			return fmt.Errorf("slackfake: deliver %s: %w", id, errors.Join(err, ctx.Err()))
		}
	}
}

// SetRedelivery changes the redelivery policy at run time (see WithRedelivery).
func (s *Server) SetRedelivery(after time.Duration, maxRetries int) {
	s.mu.Lock()
	s.redeliver, s.maxRetry = after, maxRetries
	s.notifyLocked()
	s.mu.Unlock()
}

// redeliveryLoop redelivers unacked envelopes whose latest delivery is older
// than the redelivery timeout. It is the only goroutine that redelivers.
func (s *Server) redeliveryLoop() {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		after, maxRetry := s.redeliver, s.maxRetry
		var due []string
		if after > 0 {
			now := time.Now()
			for _, id := range s.envOrder {
				st := s.envs[id]
				n := len(st.env.Deliveries)
				if st.env.Acked || st.inFlight || n == 0 || n > maxRetry {
					continue
				}
				if now.Sub(st.env.Deliveries[n-1].SentAt) >= after {
					st.inFlight = true
					due = append(due, id)
				}
			}
		}
		s.mu.Unlock()
		for _, id := range due {
			s.mu.Lock()
			attempt := len(s.envs[id].env.Deliveries)
			s.mu.Unlock()
			ctx, cancel := context.WithTimeout(s.ctx, max(after, time.Second))
			if err := s.deliver(ctx, id, attempt, "timeout"); err != nil {
				s.log.Warn("slackfake: redelivery", "envelope", id, "err", err)
			}
			cancel()
			s.mu.Lock()
			s.envs[id].inFlight = false
			s.mu.Unlock()
		}
	}
}

// WaitAck waits up to timeout for the first ack of an envelope.
func (s *Server) WaitAck(envelopeID string, timeout time.Duration) (Ack, error) {
	ctx, cancel := context.WithTimeout(s.ctx, timeout)
	defer cancel()
	var a Ack
	err := s.Wait(ctx, func() bool {
		var ok bool
		a, ok = s.firstAck(envelopeID)
		return ok
	})
	if err != nil {
		return Ack{}, fmt.Errorf("slackfake: no ack for %s within %s: %w", envelopeID, timeout, err)
	}
	return a, nil
}

func (s *Server) firstAck(id string) (Ack, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.envs[id]
	if !ok || !st.env.Acked {
		return Ack{}, false
	}
	return st.env.Ack, true
}

// Acks returns every ack received, in arrival order.
func (s *Server) Acks() []Ack {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Ack(nil), s.acks...)
}

// AckLatencies returns, for each acked envelope in send order, the time from
// its latest delivery before the ack to the first ack.
func (s *Server) AckLatencies() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Duration
	for _, id := range s.envOrder {
		if st := s.envs[id]; st.env.Acked {
			out = append(out, st.env.Ack.Latency)
		}
	}
	return out
}

// Envelopes returns every envelope sent, in send order.
func (s *Server) Envelopes() []Envelope {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Envelope, 0, len(s.envOrder))
	for _, id := range s.envOrder {
		e := s.envs[id].env
		e.Deliveries = append([]Delivery(nil), e.Deliveries...)
		out = append(out, e)
	}
	return out
}

// Unacked returns the ids of envelopes that have not been acked.
func (s *Server) Unacked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, id := range s.envOrder {
		if !s.envs[id].env.Acked {
			out = append(out, id)
		}
	}
	return out
}
