package agent

import (
	"slices"
	"testing"
)

// A claim's numbers and dates must appear in its quote, or the claim is
// marked (the issue: "a claim may say more than its quote — a date that is
// not in the quote").
func TestUnstatedFigures(t *testing.T) {
	tests := []struct {
		name, claim, quote string
		want               []string
	}{
		{"all stated", "Fines reach 7% of turnover.", "fines of up to 7 % of global annual turnover", nil},
		{"a year the quote lacks", "The act took effect in 2025.", "The act took effect after its publication.", []string{"2025"}},
		{"an amount the quote lacks", "The robot lifts 1,200 kg at 3.5 m/s.", "It lifts loads of 1200 kg.", []string{"3.5"}},
		{"a month by name", "The law applies from 2025-06-01.", "The law applies from 1 June 2025.", nil},
		{"a month the quote lacks", "Sales began on 2024-03-15.", "Sales began on 15 April 2024.", []string{"3"}},
		{"full-width digits", "２０２５年に施行された。", "本法は2025年に施行された。", nil},
		{"japanese date", "2025年6月1日に施行。", "本法は2025年5月1日に施行される。", []string{"6"}},
		{"zero fraction and leading zero", "Up 7.0 percent in month 06.", "rose 7 percent in 6 months", nil},
		{"no numbers", "The act bans social scoring.", "Social scoring is prohibited.", nil},
		{"each once", "2025 and 2025 again", "nothing", []string{"2025"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := unstatedFigures(tt.claim, tt.quote); !slices.Equal(got, tt.want) {
				t.Errorf("unstatedFigures = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMarkClaim(t *testing.T) {
	if got := markClaim("The act took effect in 2025.", "The act took effect.", "en"); got != "The act took effect in 2025. [not in the quote: 2025]" {
		t.Errorf("en: %q", got)
	}
	if got := markClaim("2025年に施行。", "施行された。", "ja"); got != "2025年に施行。 ［引用にない数値: 2025］" {
		t.Errorf("ja: %q", got)
	}
	if got := markClaim("Fines reach 7%.", "up to 7% of turnover", "en"); got != "Fines reach 7%." {
		t.Errorf("stated: %q", got)
	}
}
