package llm

import (
	"errors"
	"testing"
)

func TestDecodeJSONTolerant(t *testing.T) {
	type out struct {
		Answer string `json:"answer"`
		N      int    `json:"n"`
	}
	tests := []struct {
		name    string
		in      string
		want    out
		wantErr bool
	}{
		{"plain", `{"answer":"a","n":1}`, out{"a", 1}, false},
		{"whitespace", "\n  {\"answer\":\"a\",\"n\":1}  \n", out{"a", 1}, false},
		{"think block", "<think>let me think {not json}</think>\n{\"answer\":\"a\",\"n\":2}", out{"a", 2}, false},
		{"think uppercase multiline", "<THINK>\nhmm\n</THINK>{\"answer\":\"b\",\"n\":3}", out{"b", 3}, false},
		{"thinking tag", "<thinking>x</thinking>{\"answer\":\"c\",\"n\":4}", out{"c", 4}, false},
		{"close without open", "the template opened it {\"answer\":\"wrong\"} </think>\n{\"answer\":\"d\",\"n\":5}", out{"d", 5}, false},
		{"unterminated leading think", "<think>I could answer {\"answer\":\"draft\",\"n\":0} but\nfinal: {\"answer\":\"e\",\"n\":6}", out{"e", 6}, false},
		{"code fence json", "```json\n{\"answer\":\"f\",\"n\":7}\n```", out{"f", 7}, false},
		{"code fence bare", "Here you go:\n```\n{\"answer\":\"g\",\"n\":8}\n```\nAnything else?", out{"g", 8}, false},
		{"leading prose", "Sure! Here is the JSON you asked for: {\"answer\":\"h\",\"n\":9}", out{"h", 9}, false},
		{"prose with braces first", "Use {curly} braces: {\"answer\":\"i\",\"n\":10}", out{"i", 10}, false},
		{"prose with unmatched brace", "A { stray brace. {\"answer\":\"j\",\"n\":11}", out{"j", 11}, false},
		{"trailing commas", "{\"answer\":\"k\",\"n\":12,}", out{"k", 12}, false},
		{"trailing comma in array", "{\"answer\":\"l\",\"n\":13, \"x\":[1,2,],}", out{"l", 13}, false},
		{"raw newline in string", "{\"answer\":\"line1\nline2\",\"n\":14}", out{"line1\nline2", 14}, false},
		{"braces inside strings", `{"answer":"a } tricky { one","n":15}`, out{"a } tricky { one", 15}, false},
		{"escaped quote", `{"answer":"say \"hi\" }","n":16}`, out{`say "hi" }`, 16}, false},
		{"japanese", "回答です：{\"answer\":\"東京\",\"n\":17}", out{"東京", 17}, false},
		{"skips wrong type candidate", `["not","an","object"] then {"answer":"m","n":18}`, out{"m", 18}, false},
		{"empty", "", out{}, true},
		{"only think", "<think>nothing</think>", out{}, true},
		{"no json", "I cannot help with that.", out{}, true},
		{"truncated", `{"answer":"cut off`, out{}, true},
		{"wrong type", `{"answer":1,"n":"x"}`, out{}, true},
		{"cut off after a complete inner object", `{"answer":"x","items":[{"answer":"inner","n":1},{"answer":"cut`, out{}, true},
		{"cut off in a code fence", "```json\n{\"answer\":\"x\",\"items\":[{\"answer\":\"inner\",\"n\":2},", out{}, true},
		{"cut off after the last bracket", `{"answer":"x","items":[{"answer":"inner","n":3}]`, out{}, true},
		{"prose bracket before the value", `Sure [now: {"answer":"n","n":20}`, out{"n", 20}, false},
		{"cut off in an array of literals", `{"answer":"x","flags":[true, fal`, out{}, true},
		{"complete value before a cut-off one", `{"answer":"first","n":19} and {"answer":"second","items":[{"answer":"in"}`, out{"first", 19}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got out
			err := DecodeJSON(tt.in, &got)
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidJSON) {
					t.Fatalf("err = %v, want ErrInvalidJSON", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeJSON: %v", err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// A plan cut off mid-JSON (the reply) is not its first subtask:
// DecodeJSON reports the reply incomplete instead of an empty plan.
func TestDecodeJSONCutOffPlan(t *testing.T) {
	type subtask struct {
		Title     string   `json:"title"`
		Queries   []string `json:"queries"`
		Workspace bool     `json:"workspace"`
	}
	var plan struct {
		Subtasks []subtask `json:"subtasks"`
	}
	reply := `{"subtasks":[{"queries":["Norvane Robotics funding"],"title":"Funding","workspace":true},{"queries":["Norvane Robotics anno`
	err := DecodeJSON(reply, &plan)
	if !errors.Is(err, ErrInvalidJSON) {
		t.Fatalf("err = %v (plan %+v), want ErrInvalidJSON", err, plan)
	}
}

func TestExtractJSON(t *testing.T) {
	got, err := ExtractJSON("<think>x</think>```json\n[1, 2, 3,]\n```")
	if err != nil || got != "[1, 2, 3]" {
		t.Errorf("ExtractJSON = %q, %v", got, err)
	}
}

func TestStripThink(t *testing.T) {
	tests := []struct {
		in, want     string
		unterminated bool
	}{
		{"<think>a</think>b", "b", false},
		{"a</think>b", "b", false},
		{"<think>a", "a", true},
		{"no tags", "no tags", false},
	}
	for _, tt := range tests {
		got, un := StripThink(tt.in)
		if got != tt.want || un != tt.unterminated {
			t.Errorf("StripThink(%q) = %q,%v want %q,%v", tt.in, got, un, tt.want, tt.unterminated)
		}
	}
}
