package slackfake

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// The admin API lets a test drive and inspect a fake running in another
// process (cmd/slackfake). It is JSON over HTTP under /_fake/, with no
// authentication: bind the fake to loopback. Request and response bodies use
// the Go field names of this package's types (durations in nanoseconds).
//
//	POST /_fake/app_mention            AppMention             -> Sent
//	POST /_fake/message                MessageEvent           -> Sent
//	POST /_fake/app_home_opened        {"User","Tab"}         -> Sent
//	POST /_fake/assistant_thread_started AssistantThreadStarted -> Sent
//	POST /_fake/block_action           BlockAction            -> Sent
//	POST /_fake/view_submission        ViewSubmission         -> Sent
//	POST /_fake/slash_command          SlashCommand           -> Sent
//	POST /_fake/envelope               {"Type","Payload","AcceptsResponsePayload"} -> {"EnvelopeID"}
//	POST /_fake/disconnect             {"ConnID","Reason"} (no ConnID: all connections)
//	POST /_fake/drop                   {"ConnID"}
//	POST /_fake/fault                  {"Method", ...Fault}
//	POST /_fake/clear_faults
//	POST /_fake/user                   User
//	POST /_fake/channel                Channel
//	POST /_fake/redelivery             {"After","MaxRetries"}
//	POST /_fake/tier_limits            Limits (enforce Slack's rate limits)
//	POST /_fake/clear_tier_limits
//	GET  /_fake/wait_ack?envelope_id=&timeout=5s -> Ack
//	GET  /_fake/messages?channel=C[&thread=TS] -> []Message
//	GET  /_fake/all_messages, /_fake/files, /_fake/views, /_fake/ephemerals,
//	     /_fake/statuses, /_fake/acks, /_fake/envelopes, /_fake/connections,
//	     /_fake/pings, /_fake/response_posts, /_fake/calls[?method=]
//	GET  /_fake/rate_limited[?method=] -> {"Count"} (calls answered 429)
func (s *Server) handleAdmin(w http.ResponseWriter, r *http.Request) {
	op := r.URL.Path[len("/_fake/"):]
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if r.Method == http.MethodGet {
		s.adminGet(w, r, op)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	res, err := s.adminPost(ctx, op, body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func decode[T any](body []byte) (T, error) {
	var v T
	if len(body) == 0 {
		return v, nil
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return v, fmt.Errorf("slackfake: admin body: %w", err)
	}
	return v, nil
}

// post decodes body as T and hands it to f.
func post[T any](body []byte, f func(T) (any, error)) (any, error) {
	v, err := decode[T](body)
	if err != nil {
		return nil, err
	}
	return f(v)
}

func (s *Server) adminPost(ctx context.Context, op string, body []byte) (any, error) {
	ok := map[string]bool{"ok": true}
	switch op {
	case "app_mention":
		return post(body, func(e AppMention) (any, error) { return s.SendAppMention(ctx, e) })
	case "message":
		return post(body, func(e MessageEvent) (any, error) { return s.SendMessage(ctx, e) })
	case "app_home_opened":
		return post(body, func(e struct{ User, Tab string }) (any, error) {
			return s.SendAppHomeOpened(ctx, e.User, e.Tab)
		})
	case "assistant_thread_started":
		return post(body, func(e AssistantThreadStarted) (any, error) { return s.SendAssistantThreadStarted(ctx, e) })
	case "block_action":
		return post(body, func(e BlockAction) (any, error) { return s.SendBlockAction(ctx, e) })
	case "view_submission":
		return post(body, func(e ViewSubmission) (any, error) { return s.SendViewSubmission(ctx, e) })
	case "slash_command":
		return post(body, func(e SlashCommand) (any, error) { return s.SendSlashCommand(ctx, e) })
	case "envelope":
		return post(body, func(e struct {
			Type                   string
			Payload                json.RawMessage
			AcceptsResponsePayload bool
		}) (any, error) {
			id, err := s.SendEnvelope(ctx, e.Type, e.Payload, e.AcceptsResponsePayload)
			return map[string]string{"EnvelopeID": id}, err
		})
	case "disconnect":
		return post(body, func(e struct{ ConnID, Reason string }) (any, error) {
			if e.Reason == "" {
				e.Reason = ReasonRefreshRequested
			}
			if e.ConnID == "" {
				return map[string]int{"Told": s.DisconnectAll(e.Reason)}, nil
			}
			return map[string]int{"Told": 1}, s.Disconnect(e.ConnID, e.Reason)
		})
	case "drop":
		return post(body, func(e struct{ ConnID string }) (any, error) { return ok, s.DropConnection(e.ConnID) })
	case "fault":
		return post(body, func(e struct {
			Method string
			Fault
		}) (any, error) {
			if e.Method == "" {
				return nil, fmt.Errorf("slackfake: fault needs a Method")
			}
			s.InjectFault(e.Method, e.Fault)
			return ok, nil
		})
	case "clear_faults":
		s.ClearFaults()
		return ok, nil
	case "user":
		return post(body, func(u User) (any, error) { s.AddUser(u); return ok, nil })
	case "channel":
		return post(body, func(c Channel) (any, error) { s.AddChannel(c); return ok, nil })
	case "redelivery":
		return post(body, func(e struct {
			After      time.Duration
			MaxRetries int
		}) (any, error) {
			s.SetRedelivery(e.After, e.MaxRetries)
			return ok, nil
		})
	case "tier_limits":
		return post(body, func(l Limits) (any, error) { s.SetTierLimits(&l); return ok, nil })
	case "clear_tier_limits":
		s.SetTierLimits(nil)
		return ok, nil
	}
	return nil, fmt.Errorf("slackfake: unknown admin operation %q", op)
}

func (s *Server) adminGet(w http.ResponseWriter, r *http.Request, op string) {
	q := r.URL.Query()
	var v any
	switch op {
	case "messages":
		if th := q.Get("thread"); th != "" {
			v = s.Thread(q.Get("channel"), th)
		} else {
			v = s.Messages(q.Get("channel"))
		}
	case "all_messages":
		v = s.AllMessages()
	case "files":
		v = s.Files()
	case "views":
		v = s.Views()
	case "ephemerals":
		v = s.Ephemerals()
	case "statuses":
		v = s.Statuses()
	case "acks":
		v = s.Acks()
	case "envelopes":
		v = s.Envelopes()
	case "connections":
		v = s.Connections()
	case "pings":
		v = s.Pings()
	case "response_posts":
		v = s.ResponsePosts()
	case "calls":
		v = s.CallLog(q.Get("method"))
	case "rate_limited":
		v = map[string]int{"Count": s.RateLimited(q.Get("method"))}
	case "wait_ack":
		timeout, err := time.ParseDuration(q.Get("timeout"))
		if err != nil {
			timeout = 5 * time.Second
		}
		a, err := s.WaitAck(q.Get("envelope_id"), min(timeout, time.Minute))
		if err != nil {
			writeJSON(w, http.StatusRequestTimeout, map[string]any{"error": err.Error()})
			return
		}
		v = a
	default:
		http.NotFound(w, r)
		return
	}
	writeJSON(w, http.StatusOK, v)
}
