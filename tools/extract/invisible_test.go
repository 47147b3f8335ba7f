package extract

import (
	"testing"
)

// TestInvisibleText checks that text no reader is ever shown is not
// content: it must not reach the model or verify a citation (issue 23).
// Panels that a control opens (an accordion's answer, a tab) are shown on
// demand and stay.
func TestInvisibleText(t *testing.T) {
	article := `<h1>Headline</h1><p>` + prose("alpha", 3) + `</p><p>` + prose("beta", 3) + `</p>`
	claim := `The vendor guarantees a full refund to every customer within ninety days of the purchase.`
	claim2 := `The vendor also states that the product was certified by the national safety board last year.`
	tests := []struct {
		name    string
		hidden  string // placed after the article's paragraphs
		want    []string
		notWant []string
	}{
		{name: "hidden attribute, nothing opens it", hidden: `<div hidden><p>` + claim + `</p></div>`, notWant: []string{claim}},
		{name: "hidden attribute, two paragraphs", hidden: `<div hidden><p>` + claim + `</p><p>` + claim2 + `</p></div>`, notWant: []string{claim, claim2}},
		{name: "font-size 0", hidden: `<p style="font-size:0">` + claim + `</p>`, notWant: []string{claim}},
		{name: "font-size 0px on a span inside a paragraph", hidden: `<p>` + prose("gamma", 1) + ` <span style="font-size: 0px">` + claim + `</span></p>`,
			want: []string{"gamma sentence number 0"}, notWant: []string{claim}},
		{name: "font-size 0 around two paragraphs", hidden: `<div style="font-size:0;line-height:0"><p>` + claim + `</p><p>` + claim2 + `</p></div>`, notWant: []string{claim, claim2}},
		{name: "zero box that clips its overflow", hidden: `<div style="width:0;height:0;overflow:hidden"><p>` + claim + `</p><p>` + claim2 + `</p></div>`, notWant: []string{claim, claim2}},
		{name: "clipped to nothing", hidden: `<div style="position:absolute;clip:rect(0,0,0,0)"><p>` + claim + `</p><p>` + claim2 + `</p></div>`, notWant: []string{claim, claim2}},
		{name: "clip-path to nothing", hidden: `<div style="position:absolute;clip-path:inset(50%)"><p>` + claim + `</p><p>` + claim2 + `</p></div>`, notWant: []string{claim, claim2}},
		{name: "display none, two paragraphs, nothing opens it", hidden: `<div style="display:none"><p>` + claim + `</p><p>` + claim2 + `</p></div>`, notWant: []string{claim, claim2}},
		{name: "screen-reader-only class, two paragraphs", hidden: `<div class="sr-only"><p>` + claim + `</p><p>` + claim2 + `</p></div>`, notWant: []string{claim, claim2}},
		{name: "visually-hidden class", hidden: `<span class="visually-hidden">` + claim + `</span>`, notWant: []string{claim}},
		{name: "visibility hidden, two paragraphs", hidden: `<section style="visibility:hidden"><p>` + claim + `</p><p>` + claim2 + `</p></section>`, notWant: []string{claim, claim2}},

		// Shown on demand or shown after all: kept.
		{name: "hidden panel a button controls", hidden: `<button aria-expanded="false" aria-controls="p1">Refunds</button><div id="p1" hidden><p>` + claim + `</p></div>`,
			want: []string{claim, "Refunds"}},
		{name: "hidden panel labelled by its tab", hidden: `<div role="tablist"><button role="tab" id="t1">Refunds</button></div><div aria-labelledby="t1" hidden><p>` + claim + `</p></div>`,
			want: []string{claim}},
		{name: "hidden tab panel", hidden: `<div role="tabpanel" hidden><p>` + claim + `</p></div>`, want: []string{claim}},
		{name: "hidden until found", hidden: `<div hidden="until-found"><p>` + claim + `</p></div>`, want: []string{claim}},
		{name: "accordion: a button before the hidden answer", hidden: `<div class="accordion"><button>Refunds</button><div hidden><p>` + claim + `</p></div></div>`,
			want: []string{claim}},
		{name: "a link to the hidden panel opens it", hidden: `<a href="#more" data-toggle="collapse">Read more</a><div id="more" hidden><p>` + claim + `</p></div>`,
			want: []string{claim}},
		{name: "font-size 0 parent, children sized again (inline-block gaps)", hidden: `<div style="font-size:0"><p style="font-size:16px">` + claim + `</p></div>`,
			want: []string{claim}},
		{name: "screen-reader-only until wide screens", hidden: `<div class="sr-only md:not-sr-only"><p>` + claim + `</p></div>`, want: []string{claim}},
		{name: "opacity 0: faded in by the page's scripts", hidden: `<div style="opacity:0"><p>` + claim + `</p></div>`, want: []string{claim}},
		{name: "opacity 1 and font-size 0.9em", hidden: `<div style="opacity:1"><p style="font-size:0.9em">` + claim + `</p></div>`, want: []string{claim}},
		{name: "a zero box that shows its overflow", hidden: `<div style="height:0"><p>` + claim + `</p></div>`, want: []string{claim}},
		{name: "display none tab that a control names", hidden: `<a href="#tab2" role="tab" aria-controls="tab2">Specs</a><div id="tab2" style="display:none"><p>` + claim + `</p><p>` + claim2 + `</p></div>`,
			want: []string{claim, claim2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := "<!doctype html><html><head><title>Headline</title></head><body><article>" + article + tt.hidden +
				"<p>" + prose("delta", 2) + "</p></article></body></html>"
			a, err := ExtractBytes([]byte(page), "https://example.com/news/page.html", Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkText(t, "text", a.Text, append(tt.want, "alpha sentence number 2", "delta sentence number 1"), tt.notWant)
		})
	}
}
