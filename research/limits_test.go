package research

import (
	"testing"

	"deepresearch/agent"
)

// The summary's count of a report's notes says what they are: open
// questions are not statements that "could not be verified" (the issue's
// "8 statement(s) could not be verified" for 30 verified citations).
func TestLimitsLineSaysWhatTheNotesAre(t *testing.T) {
	tests := []struct {
		name  string
		notes []string
		want  string
	}{
		{"none", nil, ""},
		{"open questions only", []string{agent.NoteOpenQuestion + "battery life", agent.NoteOpenQuestion + "price"}, "2 open question(s)"},
		{"removed citations", []string{agent.NoteCitationRemoved + "“It shipped in 2024.” (not_found, https://example.org)"}, "1 statement(s) could not be verified (citation removed)"},
		{"japanese", []string{"「2024年に出荷」" + agent.NoteCitationRemovedJA + "（not_found）", agent.NoteOpenQuestionJA + "価格"}, "1 statement(s) could not be verified (citation removed); 1 open question(s)"},
		{"not passed", []string{agent.NoteNotResearched + "price", "The token budget ran out: research stopped early."}, "1 point(s) not fully researched; 1 note(s) on the research"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := limitsLine(tt.notes); got != tt.want {
				t.Errorf("limitsLine = %q, want %q", got, tt.want)
			}
		})
	}
}
