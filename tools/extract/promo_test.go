package extract

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPromoLines checks that promotional lines inside an article's body (a
// lead-in of two to four words in capitals and then links, in the same
// paragraph or the next) are dropped, and that a one-word lead-in ("READ:")
// and a lead-in followed by prose are not.
func TestPromoLines(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "promo_lines.html"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := ExtractBytes(data, "https://example.com/news/standoff.html", Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkText(t, "text", a.Text,
		[]string{"for a third day", "running low", "The full statement", "of their own accord", "opened a second exit"},
		[]string{"SEE MORE", "under siege in university", "DON'T MISS", "Leader furious", "Match cancelled"})
}

func TestLeadIn(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"SEE MORE: ", true},
		{"DON'T MISS", true},
		{"READ MORE »", true},
		{"READ:", false},
		{"See more:", false},
		{"A B", false},
		{"THIS IS FAR TOO LONG A LEAD", false},
	}
	for _, tt := range tests {
		if got := leadIn(tt.s); got != tt.want {
			t.Errorf("leadIn(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}

// TestCapsPromos checks that paragraphs that are a link in capitals of five
// words or more are dropped when a page has two or more, and that a lone
// one stays.
func TestCapsPromos(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "caps_promos.html"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := ExtractBytes(data, "https://example.com/entertainment/star.html", Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkText(t, "text", a.Text,
		[]string{"eliminated from the competition", "proud of what the pair", "four couples"},
		[]string{"SERIOUS HEALTH CONDITION", "FORMER SPOKESMAN"})
	// One such paragraph alone is the article's own.
	one := strings.Replace(string(data), "FORMER SPOKESMAN ELIMINATED FROM THE DANCE SHOW", "Former spokesman eliminated", 1)
	a, err = ExtractBytes([]byte(one), "https://example.com/entertainment/star.html", Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkText(t, "text", a.Text, []string{"SERIOUS HEALTH CONDITION"}, nil)
}

func TestCapsLinkLine(t *testing.T) {
	tests := []struct {
		html string
		want bool
	}{
		{`<p><a href="/x"><b>JUDGE OPENS UP ABOUT HEALTH</b></a></p>`, true},
		{`<p><a href="/x">WATCH THE FULL INTERVIEW</a></p>`, false}, // four words: a button
		{`<p><a href="/x">Judge opens up about health</a></p>`, false},
		{`<p>SEE THIS: <a href="/x">JUDGE OPENS UP</a> AND MORE TEXT THAT IS NOT A LINK</p>`, false},
	}
	for _, tt := range tests {
		doc, err := parse([]byte("<html><body>" + tt.html + "</body></html>"))
		if err != nil {
			t.Fatal(err)
		}
		if got := capsLinkLine(findBody(doc).FirstChild); got != tt.want {
			t.Errorf("capsLinkLine(%s) = %v, want %v", tt.html, got, tt.want)
		}
	}
}

// TestMachineLabels checks that labels written for scripts (a token that
// repeats the element's own data attribute) are dropped and identifiers in
// code are not.
func TestMachineLabels(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "machine_labels.html"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := ExtractBytes(data, "https://example.com/markets/asia.html", Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkText(t, "text", a.Text, []string{"Asian shares slipped", "yen rose", "follow-up"},
		[]string{"narrow-browser-and-phone", "landscape-tablet", "wide-browser-and-larger"})
}

// TestDisclaimerBox checks that a box headed "Disclaimer" under an article
// is dropped.
func TestDisclaimerBox(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "disclaimer_box.html"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := ExtractBytes(data, "https://example.com/mind/activity", Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkText(t, "text", a.Text, []string{"helps the mind", "better sleep", "sense of achievement"},
		[]string{"Disclaimer", "archived content"})
}

// TestSalesPitchAfterStory checks a sales pitch that closes a story's
// body, in a box named "pitch": a bold offer and a few sentences selling
// a report (fool.com). It came through as the story's last paragraphs.
// A box whose name only holds the word in a longer one ("pitcher") is
// read like any other.
func TestSalesPitchAfterStory(t *testing.T) {
	tests := []struct {
		name, box     string
		want, notWant []string
	}{
		{
			name:    "a pitch box",
			box:     `<div id="pitch"><p><strong>1 great stock to buy for next year</strong><br>` + prose("offer", 3) + `</p></div>`,
			notWant: []string{"offer sentence", "great stock"},
		},
		{
			name: "a pitcher's notes",
			box:  `<div class="pitcher-notes"><p>` + prose("notes", 3) + `</p></div>`,
			want: []string{"notes sentence number 2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			article := `<article><h1>Headline</h1><div class="entry-content">` + paras("story", 6) + tt.box + `</div></article>`
			checkNewsPost(t, article, append([]string{"story5 sentence"}, tt.want...), tt.notWant)
		})
	}
}

// TestLinkedLeadIn checks that a paragraph that is a link whose own text
// opens with a lead-in in capitals and a colon ("READ MORE: Title") is
// dropped, and that a link in capitals without the colon, a one-word
// lead-in (the article's own source, see leadIn) and such a link followed
// by prose of the paragraph stay.
func TestLinkedLeadIn(t *testing.T) {
	tests := []struct {
		name, para, text string
		kept             bool
	}{
		{"lead-in inside the link", `<p><a href="/other-park"> <b>READ MORE: Europe's lesser-known theme park has terrifying rollercoasters</b> </a></p>`,
			"lesser-known theme park", false},
		{"a headline in capitals", `<p><a href="/mars">NASA LAUNCHES ITS NEW PROBE TO MARS</a></p>`,
			"NASA LAUNCHES", true},
		{"a one-word lead-in", `<p><a href="/report.pdf">SOURCE: The annual report of the ministry of tourism on theme parks</a></p>`,
			"annual report of the ministry", true},
		{"prose after the link", `<p><a href="/report">SEE ALSO: the report</a> says the park has the tallest rollercoaster in the country and the fastest.</p>`,
			"tallest rollercoaster", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkKeptInGarden(t, tt.para, tt.text, tt.kept) })
	}
}
