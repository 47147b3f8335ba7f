package extract

import (
	"fmt"
	"strings"
	"testing"
)

// TestSections checks that a landing page's sections named like furniture
// ("hero-banner", "cta", a section's "header") are kept on a page that
// does not declare itself a post, and dropped as before on one that does.
func TestSections(t *testing.T) {
	body := `<nav><a href="/">Home</a> <a href="/services">Services</a></nav><main>` +
		`<section class="hero-banner"><h2>Moving made simple</h2><p>` + prose("alpha", 2) + `</p></section>` +
		`<section class="services"><h2>Full service</h2><p>` + prose("beta", 3) + `</p><p>` + prose("gamma", 3) + `</p></section>` +
		`<div class="section-header"><p>` + prose("delta", 1) + `</p></div>` +
		`<div class="cta-block"><p>` + prose("epsilon", 1) + `</p><a href="/quote">Get a quote</a></div>` +
		`</main><footer><a href="/privacy">Privacy</a></footer>`
	spared := []string{"alpha sentence number 1", "delta sentence number 0", "epsilon sentence number 0"}
	tests := []struct {
		name, head string
		kept       bool
	}{
		{"a site's page", `<meta property="og:type" content="website">`, true},
		{"no metadata", ``, true},
		{"an article", `<meta property="og:type" content="article">`, false},
		{"a blog post by json-ld", `<script type="application/ld+json">{"@type":"BlogPosting","headline":"Moving"}</script>`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := "<html><head><title>Movers</title>" + tt.head + "</head><body>" + body + "</body></html>"
			a, err := ExtractBytes([]byte(page), "https://movers.example/", Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(a.Text, "gamma sentence number 2") {
				t.Errorf("the main section is missing:\n%s", a.Text)
			}
			for _, w := range spared {
				if got := strings.Contains(a.Text, w); got != tt.kept {
					t.Errorf("%q in the text = %v, want %v:\n%s", w, got, tt.kept, a.Text)
				}
			}
			if strings.Contains(a.Text, "Privacy") {
				t.Errorf("the footer is in the text:\n%s", a.Text)
			}
		})
	}
}

// TestCarousels checks that a landing page's carousel of testimonials is
// kept, and so are its teasers and "more" panels (see panelNames), and
// that a carousel of reviews, one of other products on a product's page
// and one without prose are not.
func TestCarousels(t *testing.T) {
	main := `<main><section class="services"><h2>Full service</h2><p>` + prose("beta", 3) + `</p><p>` + prose("gamma", 3) + `</p></section>`
	slides := func(class, tag string) string {
		var b strings.Builder
		b.WriteString(`<div class="` + class + `">`)
		// Two slides: three or more like elements holding a good share
		// of the text would be the page's items (see pageItem), kept
		// whatever their container's name on any page but a product's.
		for i := range 2 {
			fmt.Fprintf(&b, `<div class="slide"><p>%s</p></div>`, prose(fmt.Sprintf("%s%d", tag, i), 1))
		}
		return b.String() + `</div>`
	}
	tests := []struct {
		name, head, body string
		tag              string
		kept             bool
	}{
		{"testimonials on a site's page", `<meta property="og:type" content="website">`,
			main + slides("testimonial-carousel", "omega") + `</main>`, "omega", true},
		{"reviews on a site's page", `<meta property="og:type" content="website">`,
			main + slides("reviews-carousel", "omega") + `</main>`, "omega", false},
		{"on a product's page", `<meta property="og:type" content="product">`,
			main + slides("product-carousel", "omega") + `</main>`, "omega", false},
		{"on an article", `<meta property="og:type" content="article">`,
			main + slides("testimonial-carousel", "omega") + `</main>`, "omega", false},
		{"a service's teaser", `<meta property="og:type" content="website">`,
			main + slides("service-teaser", "omega") + `</main>`, "omega", true},
		{"a panel of more", `<meta property="og:type" content="website">`,
			main + slides("more-panel", "omega") + `</main>`, "omega", true},
		{"without prose", `<meta property="og:type" content="website">`,
			strings.Replace(main, "</section>", `<div class="logo-carousel"><ul><li>Acme Corporation</li><li>Globex Corporation</li><li>Initech Software</li></ul></div></section>`, 1) + `</main>`,
			"Globex", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := "<html><head><title>Movers</title>" + tt.head + "</head><body>" + tt.body + "</body></html>"
			a, err := ExtractBytes([]byte(page), "https://movers.example/", Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(a.Text, "gamma sentence number 2") {
				t.Errorf("the main section is missing:\n%s", a.Text)
			}
			if got := strings.Contains(a.Text, tt.tag); got != tt.kept {
				t.Errorf("carousel in the text = %v, want %v:\n%s", got, tt.kept, a.Text)
			}
		})
	}
}
