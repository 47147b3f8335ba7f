package bot

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/slack-go/slack/socketmode"
)

// TestStorablePayloadDropsActionTokens: the inbox stores an event without
// the asker's action_token (top level or in assistant_thread); everything
// else, numbers included, is kept as received.
func TestStorablePayloadDropsActionTokens(t *testing.T) {
	tests := []struct {
		name, typ, in string
		keep          []string
	}{
		{"message", socketmode.RequestTypeEventsAPI,
			`{"team_id":"T1","event":{"type":"message","text":"hi","ts":"1700000000.000100","action_token":"tok-secret","n":12345678901234567890}}`,
			[]string{`"text":"hi"`, `"ts":"1700000000.000100"`, `12345678901234567890`, `"team_id":"T1"`}},
		{"assistant thread", socketmode.RequestTypeEventsAPI,
			`{"event":{"type":"message","assistant_thread":{"action_token":"tok-secret","context":{"channel_id":"C1"}}}}`,
			[]string{`"channel_id":"C1"`}},
		{"slash command", socketmode.RequestTypeSlashCommands, `{"text":"action_token"}`, []string{`{"text":"action_token"}`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := string(storablePayload(tc.typ, json.RawMessage(tc.in)))
			if strings.Contains(got, "tok-secret") {
				t.Errorf("stored payload keeps the token: %s", got)
			}
			for _, k := range tc.keep {
				if !strings.Contains(got, k) {
					t.Errorf("stored payload lost %s: %s", k, got)
				}
			}
		})
	}
}
