package agent

import (
	"slices"
	"strings"
	"unicode"

	"deepresearch/tools/search"
)

// topicStop are words too common to say what a text is about.
var topicStop = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`the and for with about from this that these those are was were has have had its into what does did
		when how why who which will can could should would there their them they more most some any all also than then
		after before between over under latest recent new news page site home menu said says use used using our your you
		not but may one two get got make made like just only other such each per via how-to www http https com org html`) {
		m[w] = true
	}
	return m
}()

// latinTerm is a Latin word lower-cased, when it is a term: three letters
// or more, or an acronym; not a stop word, not starting with a digit.
func latinTerm(word []rune) (string, bool) {
	w := string(word)
	lw := strings.ToLower(w)
	upper := len(word) >= 2 && strings.ToUpper(w) == w && unicode.IsLetter(word[0])
	return lw, (len(word) >= 3 || upper) && !topicStop[lw] && !unicode.IsDigit(word[0])
}

// topicTerms are the words a text is about: Latin words of three letters or
// more (and acronyms such as "AI", "EU"), and pairs of adjacent kanji or
// katakana (Japanese has no spaces; pairs with kana endings say little).
func topicTerms(texts ...string) map[string]bool {
	out := map[string]bool{}
	for _, s := range texts {
		var word []rune
		flush := func() {
			if len(word) == 0 {
				return
			}
			if t, ok := latinTerm(word); ok {
				out[t] = true
			}
			word = word[:0]
		}
		var prev rune
		for _, r := range s {
			ideo := unicode.In(r, unicode.Han, unicode.Katakana) || r == 'ー'
			switch {
			case ideo:
				flush()
				if prev != 0 {
					out[string([]rune{prev, r})] = true
				}
				prev = r
				continue
			case r < 0x3000 && (unicode.IsLetter(r) || unicode.IsDigit(r)):
				word = append(word, r)
			default:
				flush()
			}
			prev = 0
		}
		flush()
	}
	return out
}

// offTopic reports whether a text's terms share none with the topic's,
// where the two can be compared: a text in a script the topic has no term
// in (an English page for a question asked in Japanese), or too few to
// judge by, cannot be judged and is not off-topic.
func offTopic(topic, terms map[string]bool) bool {
	if shared(topic, terms) > 0 {
		return false
	}
	latin := func(t string) bool { return t[0] < 0x80 }
	var tl, tc int
	var xl, xc bool
	for t := range topic {
		if latin(t) {
			tl++
		} else {
			tc++
		}
	}
	for t := range terms {
		xl, xc = xl || latin(t), xc || !latin(t)
	}
	// one term of a script ("AI" in a Japanese query) is too little to
	// judge a text in that script by, and so is a text of a word or two
	// ("PDF /audit.pdf")
	if len(terms) < minTopicTerms+1 {
		return false
	}
	return tl >= minTopicTerms && xl || tc >= minTopicTerms && xc
}

// minTopicTerms is how many terms of a script the topic needs before a text
// in that script can be judged off-topic (and a text needs one more).
const minTopicTerms = 2

// shared counts the terms of a that b has.
func shared(a, b map[string]bool) int {
	n := 0
	for t := range a {
		if b[t] {
			n++
		}
	}
	return n
}

// rankResults orders a search's results by how well their title, snippet
// and URL match the subtask (the terms they share with the question, the
// subtask and the query), those in the run's language first among equals,
// and says which are plainly off-topic (see offTopic). A result that cannot
// be judged (nothing to judge by, another script) keeps the best rank, in
// the provider's order: the search found it for a reason.
func rankResults(results []search.Result, topic map[string]bool, lang string) (ranked []search.Result, off map[string]bool) {
	type scored struct {
		r      search.Result
		score  int
		judged bool
	}
	ss := make([]scored, 0, len(results))
	off = map[string]bool{}
	best := 0
	for _, r := range results {
		judge := strings.TrimSpace(r.Title + " " + r.Snippet)
		terms := topicTerms(r.Title, r.Snippet, urlWords(r.URL))
		n := shared(topic, terms)
		s := scored{r: r}
		switch {
		case judge == "":
		case offTopic(topic, terms):
			off[r.URL] = true
			s.judged = true
		case n > 0:
			s.score, s.judged = 2*n, true
			if DetectLanguage(judge) == lang {
				s.score++
			}
		}
		best = max(best, s.score)
		ss = append(ss, s)
	}
	for i := range ss {
		if !ss[i].judged {
			ss[i].score = best
		}
	}
	slices.SortStableFunc(ss, func(a, b scored) int { return b.score - a.score })
	for _, s := range ss {
		ranked = append(ranked, s.r)
	}
	return ranked, off
}

// urlWords are the words of a URL's path ("/2025/eu-ai-act-fines" says
// what the page is about).
func urlWords(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	}
	if i := strings.IndexByte(u, '/'); i >= 0 {
		return strings.NewReplacer("-", " ", "_", " ", "/", " ", ".", " ").Replace(u[i:])
	}
	return ""
}

// offTopicPage reports whether a page read (its title and text) shares no
// term with the question, the subtask or the query: its evidence would not
// concern them.
func offTopicPage(title, text string, topic map[string]bool) bool {
	return offTopic(topic, topicTerms(title, clip(text, 6000)))
}
