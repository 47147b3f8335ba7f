package extractbench

import (
	"strings"
	"testing"
)

func TestRuleTake(t *testing.T) {
	body := "one two three four five six seven eight nine ten eleven twelve"
	more := body + " thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty twentyone twentytwo twentythree"
	flood := more + " " + strings.Repeat("menu item link ", 30)
	tests := []struct {
		name        string
		rule        Rule
		ours, other string
		want        bool
	}{
		{"never", Rule{}, "one two", more, false},
		{"ours cut short: the other holds it and more", Rule{Longer: 1.5, Cover: 0.9}, body, more, true},
		{"the other longer but not holding ours", Rule{Longer: 1.5, Cover: 0.9}, "alpha beta gamma delta epsilon", more, false},
		{"ours flooded: it holds the other's shorter text", Rule{Shorter: 2, Cover: 0.9}, flood, body, true},
		{"the other shorter but different", Rule{Shorter: 2, Cover: 0.9}, flood, "alpha beta gamma delta epsilon", false},
		{"no text from the other", Rule{Longer: 1.5, Shorter: 2, Cover: 0.5}, body, "", false},
		{"no text from ours", Rule{Longer: 1.5, Cover: 0.9}, "", body, true},
		{"ours unsure (short): the other's longer text, whatever it holds", Rule{Short: 20, Longer: 2}, "alpha beta gamma delta epsilon", more, true},
		{"ours not short enough", Rule{Short: 5, Longer: 2}, "alpha beta gamma delta epsilon zeta eta theta", more, false},
		{"ours short, the other not long enough", Rule{Short: 20, Longer: 5}, body, more, false},
	}
	for _, tt := range tests {
		if got := tt.rule.Take(tt.ours, tt.other); got != tt.want {
			t.Errorf("%s: Take = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCombineTakesTheOtherWhereTheRuleSays(t *testing.T) {
	pages := []Page{{ID: "1", Truth: "a b c d e f g h"}, {ID: "2", Truth: "p q r s t"}}
	ours := Result{Name: "ours", Pages: []PageResult{{Pred: "a b c d"}, {Pred: "p q r s t"}}}
	other := Result{Name: "other", Pages: []PageResult{{Pred: "a b c d e f g h"}, {Pred: "p q"}}}
	for i, p := range pages {
		ours.Pages[i].Score = ScorePage(p.Truth, ours.Pages[i].Pred)
		other.Pages[i].Score = ScorePage(p.Truth, other.Pages[i].Pred)
	}
	c := Combine(pages, ours, other, Rule{Longer: 1.5, Cover: 0.9})
	if c.Pages[0].Pred != other.Pages[0].Pred || c.Pages[1].Pred != ours.Pages[1].Pred {
		t.Errorf("combined %q %q, want the other's first page and our second", c.Pages[0].Pred, c.Pages[1].Pred)
	}
	if c.Summary.F1 != 1 {
		t.Errorf("F1 = %v, want 1", c.Summary.F1)
	}
}
