package extract

import (
	"strings"
	"testing"
)

// TestKickerLinks checks that on a page that declares a post, a list of
// the site's own stories inside the article, each item a kicker ending in
// a colon and one link, is left out, and that a list linking elsewhere, a
// list whose items say more than a kicker, a single such item, and such a
// list on a page that does not declare a post stay.
func TestKickerLinks(t *testing.T) {
	own := `<ul><li><strong>Natural disaster: </strong><a href="/panorama/article1/volcano-wiped-out-a-culture.html">Volcano wiped out a whole culture – myth thrills archaeologists</a></li>` +
		`<li><strong>Archaeology: </strong><a href="/panorama/article2/simple-explanation.html">Simple explanation for a Christmas miracle – expert takes a myth apart</a></li>` +
		`<li><strong>Interview: </strong><a href="/panorama/article3/trace-of-a-god.html">German archaeologist finds a spectacular trace of where a god came from</a></li></ul>`
	tests := []struct {
		name, head, list, text string
		kept                   bool
	}{
		{"the site's stories", postHead, own, "Simple explanation for a Christmas miracle", false},
		{"links elsewhere", postHead, `<ul><li><strong>Study: </strong><a href="https://journal.example.org/maya-cities">Lidar survey of the lowland cities of the Maya</a></li>` +
			`<li><strong>Data: </strong><a href="https://data.example.org/maya">The survey's point clouds and the maps made from them</a></li></ul>`,
			"Lidar survey of the lowland cities", true},
		{"items that say more", postHead, `<ul><li><strong>Step one: </strong><a href="/guide/clean.html">Clean the filter of the machine</a> and let it dry for a whole day before you put it back.</li>` +
			`<li><strong>Step two: </strong><a href="/guide/descale.html">Descale the water tank of the machine</a> with vinegar and rinse it twice with water.</li></ul>`,
			"let it dry for a whole day", true},
		{"a single item", postHead, `<ul><li><strong>Archaeology: </strong><a href="/panorama/article2/simple-explanation.html">Simple explanation for a Christmas miracle – expert takes a myth apart</a></li></ul>`,
			"Simple explanation for a Christmas miracle", true},
		{"a page that does not declare a post", "", own, "Simple explanation for a Christmas miracle", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := `<html><head><title>Maya cities</title>` + tt.head + `</head><body><article><h1>Maya cities</h1>` + paras("alpha", 3) +
				tt.list + paras("beta", 3) + `</article></body></html>`
			a, err := ExtractBytes([]byte(page), "https://www.example.de/panorama/article9/maya-cities.html", Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkText(t, "text", a.Text, []string{"alpha0 sentence", "beta2 sentence"}, nil)
			if got := strings.Contains(a.Text, tt.text); got != tt.kept {
				t.Errorf("%q kept = %v, want %v:\n%s", tt.text, got, tt.kept, a.Text)
			}
		})
	}
}
