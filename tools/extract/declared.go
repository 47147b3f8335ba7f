package extract

import (
	"strings"

	"github.com/PuerkitoBio/goquery"
)

// declared is what a page says it is in its metadata. readMeta reads it
// with the rest of the metadata, once per page; every reading of the
// page's body (see extractContent) uses it.
type declared struct {
	// product: one product's page (see declare).
	product bool
	// post: an article, a blog post, a forum thread, a question and its
	// answers: a page of authored text, not of a site's sections.
	post bool
	// discussion: a thread, whose replies are content (see
	// discussionTypes).
	discussion bool
}

// postTypes are the schema.org types of authored text.
var postTypes = wordSet(`article newsarticle blogposting reportagenewsarticle analysisnewsarticle
	opinionnewsarticle reviewnewsarticle backgroundnewsarticle scholarlyarticle techarticle
	liveblogposting socialmediaposting posting discussionforumposting qapage`)

// statement is what declare judges: the page's og:type (lower case),
// whether it has JSON-LD, the objects its JSON-LD scripts state, and
// whether one of those scripts names a discussion type.
type statement struct {
	ogType       string
	anyLD        bool
	ld           []map[string]any
	discussionLD bool
}

// declare judges what the page says it is. It is one product's page when
// its og:type is "product" (not a "product.group", a shop's collection)
// or it has exactly one JSON-LD object or one microdata item of a product
// type (a buyer's guide declares several), unless its og:type is
// "article" (a review or a guide that marks up the product it is about).
// It is a post when a JSON-LD object has a type of postTypes, or when its
// og:type is "article" and it has no JSON-LD: SEO plugins write og:type
// "article" on every page of a site, its landing pages too, and state
// what the page is in JSON-LD (a WebPage, an Article). Counting og:type
// "article" as a post whatever the JSON-LD says lowered F1 on the broad
// corpus on four of the five training sets of the cross-validation by
// site (one tied), scrapinghub's unchanged; ignoring og:type "article"
// altogether lowered scrapinghub's on all five. It is a discussion when a
// JSON-LD script or a microdata item names a discussion type. d is the
// page, for its microdata items.
func declare(d *goquery.Document, st statement) declared {
	ld, posts := 0, 0
	for _, o := range st.ld {
		p, a := ldKinds(o)
		ld += p
		posts += a
	}
	md, discussion := 0, st.discussionLD
	d.Find("[itemtype]").Each(func(_ int, s *goquery.Selection) {
		it := s.AttrOr("itemtype", "")
		if len(it) > 200 {
			return
		}
		if namesDiscussion(it) {
			discussion = true
		}
		for _, u := range strings.Fields(it) {
			if i := strings.LastIndexByte(u, '/'); i >= 0 && productTypes[strings.ToLower(u[i+1:])] {
				md++
				break
			}
		}
	})
	dc := declared{post: posts > 0 || st.ogType == "article" && !st.anyLD, discussion: discussion}
	switch st.ogType {
	case "product", "product.item":
		dc.product = true
	case "article":
	default:
		dc.product = ld == 1 || md == 1
	}
	return dc
}

// ldKinds reports whether a JSON-LD object is of a product type and
// whether of a post type, as 0 or 1.
func ldKinds(o map[string]any) (product, post int) {
	for _, ty := range ldTypes(o["@type"]) {
		ty = strings.ToLower(ty)
		if productTypes[ty] {
			product = 1
		}
		if postTypes[ty] {
			post = 1
		}
	}
	return product, post
}
