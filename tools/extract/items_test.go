package extract

import (
	"fmt"
	"strings"
	"testing"
)

// eventCards returns n event cards of a listing whose class names a
// carousel, a word that elsewhere names furniture.
func eventCards(n int) string {
	var b strings.Builder
	b.WriteString(`<ul class="events-grid">`)
	for i := range n {
		fmt.Fprintf(&b, `<li class="carousel-card group"><h3><a href="/events/%d">Exhibition of old maps number %d</a></h3>`+
			`<p>Opens May %d</p><p>Gallery %d, second floor, east wing</p></li>`, i, i, i+1, 200+i)
	}
	b.WriteString(`</ul>`)
	return b.String()
}

// TestPageItems checks that the parts of a page's items are kept although
// their class names furniture (see pageItem), and that furniture repeated
// a few times beside an article is not.
func TestPageItems(t *testing.T) {
	var promos strings.Builder
	for i := range 3 {
		fmt.Fprintf(&promos, `<div class="promo-box"><a href="/offer-%d">Subscribe today and save on offer %d</a></div>`, i, i)
	}
	var others strings.Builder
	others.WriteString(`<div class="product-carousel">`)
	for i := range 4 {
		fmt.Fprintf(&others, `<div class="carousel-item"><h3>Kettle model %d</h3><p>A steel kettle that boils a litre in two minutes.</p></div>`, i)
	}
	others.WriteString(`</div>`)
	tests := []struct {
		name          string
		head, body    string
		want, notWant []string
	}{
		{
			name:    "a product page's carousel of other products is not its items",
			head:    `<meta property="og:type" content="product">`,
			body:    `<main><h1>Headline</h1><p>` + prose("alpha", 4) + `</p>` + others.String() + `</main>`,
			want:    []string{"alpha sentence number 3"},
			notWant: []string{"Kettle model 2"},
		},
		{
			name: "the same carousel on a page of items is kept",
			body: `<main><h1>Headline</h1><p>` + prose("alpha", 4) + `</p>` + others.String() + `</main>`,
			want: []string{"alpha sentence number 3", "Kettle model 2"},
		},
		{
			name: "event cards named carousel are the listing",
			body: `<nav><a href="/">Home</a> <a href="/visit">Visit</a></nav><main><h1>What's on</h1>` + eventCards(8) +
				`</main><footer><a href="/about">About the museum</a></footer>`,
			want:    []string{"Exhibition of old maps number 0", "Gallery 207, second floor", "Opens May 8"},
			notWant: []string{"About the museum"},
		},
		{
			name:    "promo boxes beside an article are furniture",
			body:    `<article><h1>Headline</h1><p>` + prose("alpha", 4) + `</p>` + promos.String() + `<p>` + prose("beta", 4) + `</p></article>`,
			want:    []string{"alpha sentence number 3", "beta sentence number 0"},
			notWant: []string{"Subscribe today"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := "<!doctype html><html><head><title>Headline</title>" + tt.head + "</head><body>" + tt.body + "</body></html>"
			a, err := ExtractBytes([]byte(page), "https://example.com/whats-on", Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkText(t, "text", a.Text, tt.want, tt.notWant)
		})
	}
}

// TestCardLinks checks that on a page of items the short blocks of a card
// made one link (see blockLink) are kept, and that a menu's short links
// are not.
func TestCardLinks(t *testing.T) {
	var b strings.Builder
	b.WriteString(`<nav><a href="/">Home</a></nav><div class="menu-list"><ul><li><a href="/a">Jobs</a></li><li><a href="/b">Companies</a></li>` +
		`<li><a href="/c">Salaries</a></li></ul></div><h1>Remote jobs</h1><ul class="jobs">`)
	for i := range 8 {
		fmt.Fprintf(&b, `<li><a href="/jobs/%d"><h4>Go Developer %d</h4><div>Acme %d</div><div>Remote</div><div>Full-Time</div>`+
			`<p>$%d,000 - $%d,000 USD a year</p></a></li>`, i, i, i, 50+i, 70+i)
	}
	b.WriteString(`</ul>`)
	page := "<!doctype html><html><head><title>Remote jobs</title></head><body>" + b.String() + "</body></html>"
	a, err := ExtractBytes([]byte(page), "https://example.com/jobs", Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkText(t, "text", a.Text, []string{"Go Developer 0", "Acme 7", "Full-Time", "$57,000 - $77,000 USD"}, []string{"Companies", "Salaries"})
}

// TestContainerOfItems checks that a container named as furniture that
// holds the page's items (see holdsItems) is kept, and that one holding
// a menu's links is not.
func TestContainerOfItems(t *testing.T) {
	var features, links strings.Builder
	for i := range 4 {
		fmt.Fprintf(&features, `<div class="feature-card"><h3>Feature number %d</h3><p>Plan %d for small teams</p><p>$%d a month</p></div>`, i, i, 10+i)
		fmt.Fprintf(&links, `<div class="link-item"><a href="/section-%d">A section of the site number %d</a></div>`, i, i)
	}
	body := `<div class="header-links">` + links.String() + `</div><main><h1>Our service</h1><p>` + prose("alpha", 1) +
		`</p><div class="promo-grid">` + features.String() + `</div></main>`
	page := "<!doctype html><html><head><title>Our service</title></head><body>" + body + "</body></html>"
	a, err := ExtractBytes([]byte(page), "https://example.com/service", Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkText(t, "text", a.Text, []string{"alpha sentence number 0", "Feature number 0", "Plan 3 for small teams", "$13 a month"},
		[]string{"A section of the site"})
}

// TestHiddenItems checks that an element hidden by its style that holds
// mostly the page's items (a tab of plans shown on demand) is kept.
func TestHiddenItems(t *testing.T) {
	plans := func(period string) string {
		var b strings.Builder
		for i := range 4 {
			fmt.Fprintf(&b, `<div class="plan-card"><h3>Plan %d billed %s</h3><p>Up to %d seats</p><p>$%d per seat</p></div>`, i, period, 5*(i+1), 8+i)
		}
		return b.String()
	}
	body := `<main><h1>Pricing</h1><p>` + prose("alpha", 1) + `</p><div class="tab">` + plans("monthly") +
		`</div><div class="tab" style="display:none">` + plans("yearly") + `</div></main>`
	page := "<!doctype html><html><head><title>Pricing</title></head><body>" + body + "</body></html>"
	a, err := ExtractBytes([]byte(page), "https://example.com/pricing", Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkText(t, "text", a.Text, []string{"Plan 0 billed monthly", "Plan 3 billed yearly", "Up to 20 seats"}, nil)
}

// TestHideNegation checks that a class starting with "hide" denies the
// furniture word after it (see negations).
func TestHideNegation(t *testing.T) {
	body := `<article><h2 class="hide-from-toc">A heading kept out of the contents</h2><p>` + prose("alpha", 2) +
		`</p><div class="summary hide-read-more-ad"><p>` + prose("beta", 2) + `</p></div><h2>Another heading</h2><p>` +
		prose("gamma", 2) + `</p></article>`
	page := "<!doctype html><html><head><title>Science</title></head><body>" + body + "</body></html>"
	a, err := ExtractBytes([]byte(page), "https://example.com/science", Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkText(t, "text", a.Text, []string{"A heading kept out of the contents", "beta sentence number 1", "gamma sentence number 0"}, nil)
}
