package extract

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStylesheetHidden checks that text hidden by a rule of the page's
// <style> sheets rather than an inline style is not content (it must not
// verify a citation), while text that another rule shows again (a media
// query, an active tab) stays.
func TestStylesheetHidden(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "stylesheet_hidden.html"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := ExtractBytes(data, "https://example.com/news/bridge.html", Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkText(t, "text", a.Text,
		[]string{
			"ending years of debate",
			"about three years",
			"cut the commute",       // hidden, but shown again on small screens
			"packed public meeting", // hidden on small screens only
			"longest in the region", // a tab a rule shows when active
		},
		[]string{
			"Opens in a new window",        // .visually-hidden: clipped
			"first three months",           // .promo-hidden: display none
			"weekend getaways",             // #legacy-teaser
			"interactive map of the route", // div.offscreen-note: far off screen
		})
}

func TestSheetRules(t *testing.T) {
	tests := []struct {
		name, css string
		class     string
		want      string
	}{
		{"class display none", `.x{display:none}`, "x", "sheet"},
		{"tag and class", `p.x{display:none}`, "x", "sheet"},
		{"other tag", `span.x{display:none}`, "x", ""},
		{"clip", `.x{position:absolute;clip:rect(0 0 0 0)}`, "x", "invisible"},
		{"complex selector ignored", `.a .x{display:none}`, "x", ""},
		{"pseudo-class ignored", `.x:hover{display:none}`, "x", ""},
		{"inside a media condition ignored", `@media (max-width:10px){.x{display:none}}`, "x", ""},
		{"media screen applies", `@media screen{.x{display:none}}`, "x", "sheet"},
		{"print ignored", `@media print{.x{display:none}}`, "x", ""},
		{"shown again by a state", `.x{display:none}.open>.x{display:block}`, "x", ""},
		{"font-size 0 not read", `.x{font-size:0}`, "x", ""},
		{"comment", `/* .y{} */.x{display:none}`, "x", "sheet"},
		{"group", `.a, .x{display:none}`, "x", "sheet"},
		{"unclosed", `.x{display:none`, "x", "sheet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := parse([]byte(`<html><head><style>` + tt.css + `</style></head><body><p class="` + tt.class + `">t</p></body></html>`))
			if err != nil {
				t.Fatal(err)
			}
			body := findBody(doc)
			s := readSheet(body)
			if got := s.hiding(body.FirstChild); got != tt.want {
				t.Errorf("hiding = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSheetBounded checks that a huge style sheet is read only up to its
// bound.
func TestSheetBounded(t *testing.T) {
	css := strings.Repeat(".a{color:red}", maxSheetBytes/13+10) + ".x{display:none}"
	doc, err := parse([]byte(`<html><head><style>` + css + `</style></head><body><p class="x">t</p></body></html>`))
	if err != nil {
		t.Fatal(err)
	}
	body := findBody(doc)
	s := readSheet(body)
	if got := s.hiding(body.FirstChild); got != "" {
		t.Errorf("a rule past the bound hides: %q", got)
	}
}

func TestSheetMediaAttribute(t *testing.T) {
	doc, err := parse([]byte(`<html><head><style media="all and (min-width: 1080px)">.x{display:none}</style><style>.y{visibility:hidden}</style></head><body><p class="x y">t</p></body></html>`))
	if err != nil {
		t.Fatal(err)
	}
	body := findBody(doc)
	s := readSheet(body)
	if got := s.hiding(body.FirstChild); got != "" {
		t.Errorf("hiding = %q, want none (a sheet for wide screens; visibility is a script's)", got)
	}
}

// TestSheetHiddenShareOfAShortPage checks the attack on a short page: a
// block its style sheet hides, holding a good share of the page's text
// (but not most of it), must stay out, or a page author could hide a
// paragraph that verifies a citation. A sheet that hides the whole page
// until its scripts run (the block holds nearly all of it) is still read.
func TestSheetHiddenShareOfAShortPage(t *testing.T) {
	tests := []struct {
		name    string
		visible int // sentences shown
		hidden  int // sentences in the hidden block
		kept    bool
	}{
		{"a tenth of the page", 9, 1, false},
		{"over a quarter of the page", 8, 3, false},
		{"nearly half the page", 5, 4, false},
		{"the page hidden until its scripts run", 1, 12, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := `<html><head><title>Bridge</title><style>#late{display:none}</style></head><body><article><h1>Bridge</h1><p>` +
				prose("alpha", tt.visible) + `</p><div id="late"><p>SECRETWORD ` + prose("gamma", tt.hidden) + `</p></div></article></body></html>`
			a, err := ExtractBytes([]byte(page), "https://example.com/news/bridge.html", Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(a.Text, "alpha sentence number 0") {
				t.Fatalf("the visible text is missing:\n%s", a.Text)
			}
			if got := strings.Contains(a.Text, "SECRETWORD"); got != tt.kept {
				t.Errorf("hidden block kept = %v, want %v:\n%s", got, tt.kept, a.Text)
			}
		})
	}
}
