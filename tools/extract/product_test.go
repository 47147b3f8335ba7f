package extract

import (
	"fmt"
	"strings"
	"testing"
)

// TestDeclared reads the page's own statement that it is one
// product's page, or a post.
func TestDeclared(t *testing.T) {
	ld := func(objs ...string) string {
		return `<script type="application/ld+json">[` + strings.Join(objs, ",") + `]</script>`
	}
	product := `{"@context":"https://schema.org","@type":"Product","name":"Kettle"}`
	tests := []struct {
		name, head, body string
		want             declared
	}{
		{"og product", `<meta property="og:type" content="product">`, ``, declared{product: true}},
		{"og product item", `<meta property="og:type" content="product.item">`, ``, declared{product: true}},
		{"og product group is a collection", `<meta property="og:type" content="product.group">`, ``, declared{}},
		{"one json-ld product", ld(product), ``, declared{product: true}},
		{"json-ld product in the body", ``, ld(product), declared{product: true}},
		{"json-ld product type list", ld(`{"@type":["Product","Thing"],"name":"Kettle"}`), ``, declared{product: true}},
		{"a guide marks up several products", ld(product, product), ``, declared{}},
		{"an article about a product", `<meta property="og:type" content="article">` + ld(product), ``, declared{}},
		{"a blog post about a product", `<meta property="og:type" content="article">` + ld(product, `{"@type":"BlogPosting"}`), ``, declared{post: true}},
		{"a landing page of a site whose pages all say article", `<meta property="og:type" content="article">` + ld(`{"@type":"WebPage"}`), ``, declared{}},
		{"microdata product", ``, `<div itemscope itemtype="https://schema.org/Product"><h1>Kettle</h1></div>`, declared{product: true}},
		{"microdata products of a list", ``, `<div itemscope itemtype="http://schema.org/Product"></div><div itemscope itemtype="http://schema.org/Product"></div>`, declared{}},
		{"an article by og:type", `<meta property="og:type" content="article">`, ``, declared{post: true}},
		{"a news article by json-ld", `<meta property="og:type" content="website">` + ld(`{"@type":"NewsArticle"}`), ``, declared{post: true}},
		{"a forum thread", ld(`{"@graph":[{"@type":"WebSite"},{"@type":"DiscussionForumPosting","headline":"Help"}]}`), ``, declared{post: true, discussion: true}},
		{"a web site", `<meta property="og:type" content="website">` + ld(`{"@type":"Organization","name":"Movers"}`), ``, declared{}},
		{"no metadata", ``, `<p>Kettle</p>`, declared{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := parse([]byte("<html><head>" + tt.head + "</head><body>" + tt.body + "</body></html>"))
			if err != nil {
				t.Fatal(err)
			}
			if got := readMeta(doc, nil).declared; got != tt.want {
				t.Errorf("declared = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestProductReviews checks that a product page's reviews are not its
// content, though they hold more prose than its description, and that the
// same reviews on a page that is not a product's are read as before.
func TestProductReviews(t *testing.T) {
	var reviews strings.Builder
	reviews.WriteString(`<section id="reviews" class="product-reviews"><h2>Customer reviews</h2>`)
	for i := range 6 {
		fmt.Fprintf(&reviews, `<div class="review"><span class="review-author">Buyer %d</span><span class="rating">5 stars</span><p>%s</p></div>`,
			i, prose(fmt.Sprintf("omega%d", i), 2))
	}
	reviews.WriteString(`</section>`)
	body := `<main><div class="product"><h1>Kettle</h1><div class="description"><p>` + prose("alpha", 2) + `</p><p>` +
		prose("beta", 2) + `</p></div>` + reviews.String() + `</div></main>`
	for _, tt := range []struct {
		name, head string
		product    bool
	}{
		{"product page", `<meta property="og:type" content="product">`, true},
		{"other page", `<meta property="og:type" content="website">`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			page := "<html><head><title>Kettle</title>" + tt.head + "</head><body>" + body + "</body></html>"
			a, err := ExtractBytes([]byte(page), "https://shop.example/kettle", Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(a.Text, "alpha sentence number 1") {
				t.Errorf("the description is missing:\n%s", a.Text)
			}
			if got := strings.Contains(a.Text, "omega"); got == tt.product {
				t.Errorf("reviews in the text = %v on a page with product = %v:\n%s", got, tt.product, a.Text)
			}
		})
	}
}

// TestStatedBody checks that a page whose HTML holds little besides a
// shop's furniture gives the body its JSON-LD states as its own (a
// product's description, a post's text), and not a summary or a review.
func TestStatedBody(t *testing.T) {
	// About 300 characters of furniture: more than the old fallback
	// allowed (MinContent), less than the description.
	furniture := `<div class="buy"><p>Select a size. Customers say it fits true to size. Standard delivery in four to seven working days, ` +
		`free standard delivery for orders over seventy-five pounds, express delivery in three working days, returns within thirty days.</p></div>`
	tests := []struct {
		name, ld      string
		want, notWant []string
	}{
		{"a product's description",
			`{"@type":"Product","name":"Shirt","description":"<p>` + prose("resh", 3) + `</p>"}`,
			[]string{"resh sentence number 2"}, []string{"Select a size"}},
		{"a forum post's text",
			`{"@type":"DiscussionForumPosting","headline":"Shirt","text":"` + prose("shin", 3) + `"}`,
			[]string{"shin sentence number 2"}, []string{"Select a size"}},
		{"an article's description is a summary",
			`{"@type":"Article","headline":"Shirt","description":"` + prose("tav", 3) + `"}`,
			[]string{"Select a size"}, []string{"tav sentence"}},
		{"a review of the product is not its content",
			`[{"@type":"Product","name":"Shirt"},{"@type":"Review","reviewBody":"` + prose("kaf", 3) + `"}]`,
			[]string{"Select a size"}, []string{"kaf sentence"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := `<html><head><title>Shirt</title><script type="application/ld+json">` + tt.ld + `</script></head><body>` +
				`<main><h1>Shirt</h1>` + furniture + `</main></body></html>`
			a, err := ExtractBytes([]byte(page), "https://shop.example/shirt", Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(a.Text, w) {
					t.Errorf("text lacks %q:\n%s", w, a.Text)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(a.Text, w) {
					t.Errorf("text has %q:\n%s", w, a.Text)
				}
			}
		})
	}
}
