package mcpserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPHandler serves the server over streamable HTTP to clients that send
// "Authorization: Bearer <token>"; any other request is refused with 401.
// Runs started with wait=false work until ctx is done (Wait waits for
// them). An empty token refuses everything: the endpoint needs one.
func (s *Server) HTTPHandler(ctx context.Context, token string) http.Handler {
	s.mu.Lock()
	s.root = ctx
	s.mu.Unlock()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, &mcp.StreamableHTTPOptions{Logger: s.log})
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
		if token == "" || !ok || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="deepresearch"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Wait waits for the runs started with wait=false to stop (after the
// context given to HTTPHandler or Run is done).
func (s *Server) Wait() { s.wg.Wait() }
