package extract

import (
	"strings"

	"golang.org/x/net/html"
)

// A site's landing page (a service's hero, its features, its customers'
// words, a call to action) is built of sections that themes name like
// furniture: a "hero-banner", a "cta-block", a "gallery" of features, a
// section's "header" with its introduction. On an article the same names
// mark furniture beside the text (a newsletter box, a promotion). A page
// that declares itself a post (see declare) is read as before; on
// other pages the elements named only by sectionNames are kept.

// sectionNames are the weak furniture words (see negWords) that name a
// landing page's sections. Chosen on the training folds of the
// cross-validation by site, word by word among the weak furniture words:
// sparing "header", "banner" or "cta" alone raised F1 on the broad corpus
// on all five training sets, and the three together again; adding
// "gallery" and "alert" (each alone up on four, down on one) raised it on
// all five once more, scrapinghub's unchanged. "carousel", "teaser",
// "promo", "overlay", "tooltip", "more", "notice", "popular" and "meta"
// each lowered it on at least one set, or a page type's (a shop's
// "carousel" of other products, a forum's "notice"), and adding "meta"
// and "teaser" to the five lowered it on three. Sparing the five on pages
// that declare a post as well lowered scrapinghub's on all five.
var sectionNames = wordSet(`header banner cta gallery alert`)

// sparedSection reports whether the furniture words in n's class and id
// are all of sectionNames (or of panelNames, when panels is set), and no
// hiding class hides it (shown: a hiding class does not count, see
// classVerdict).
func sparedSection(n *html.Node, shown, panels bool) bool {
	classes := strings.Fields(attr(n, "class"))
	if !shown && hiddenClass(classes) {
		return false
	}
	names := classes
	if id := attr(n, "id"); !headingSlug(n, id) && !recordID(id) {
		names = append(names, id)
	}
	for _, name := range names {
		if len(name) > 200 {
			continue
		}
		for _, w := range splitWords(name) {
			if negWords[w] && !sectionNames[w] && (!panels || !panelNames[w]) {
				return false
			}
		}
	}
	return true
}

// panelNames are weak furniture words that name, on a landing page, the
// panels of its own words when they hold prose: a carousel of its
// features or its customers' testimonials, a "more" panel, a teaser of a
// service, a block of details; on a shop's page, other products and
// reviews.
var panelNames = wordSet(`carousel more meta teaser`)

// sparedPanel reports an element named only by words of panelNames (or of
// sectionNames) that holds prose, is not named for reviews and is not on a
// product's page (see namesReviews). Chosen on the training folds of the
// cross-validation by site. Carousels first: sparing every carousel
// lowered F1 on one of the five training sets and on shops' pages
// (product, collection); sparing those that hold a prose run, are not
// named for reviews and are not on product pages raised it on all five,
// and lowered no page type by more than 0.001. Sparing those named for
// reviews too did worse on four sets (collection pages fell by 0.005),
// those on product pages too worse on four (one tied), those without a
// prose run worse on two (better on one); bounding their link text at 10
// or 25 percent did worse on all five, at 40 or 60 percent no better than
// no bound. Then the other weak words one by one under the same
// conditions: "more" and "meta" each raised F1 on all five sets, and
// together again; adding "teaser" raised it on four more (one tied),
// "tooltip" on one more (four tied), "overlay" on four and lowered shops'
// pages; "promo" and "notice" lowered it on all five, "popup" changed
// nothing.
func (e *extractor) sparedPanel(n *html.Node, shown bool, size textSize) bool {
	return !e.product && size.paras >= 1 && !namesReviews(n) && sparedSection(n, shown, true)
}
