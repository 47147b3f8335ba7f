package agent

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"deepresearch/agent/citation"
	"deepresearch/prompts"
)

// Evidence is numbered once per run: the verified findings of the thread in
// the order they were collected ([E1] is the first), each finding once (by
// its id: the page and the quote). The numbers never change as findings
// accumulate, so the researchers' answers, the writer's list, the reviewer's
// and the report's citations all mean the same evidence by the same number.
type evidenceIndex struct {
	num  map[string]int // finding ID → number
	list []Finding      // list[n-1] is evidence n
}

func indexEvidence(fs []Finding) evidenceIndex {
	ix := evidenceIndex{num: map[string]int{}}
	for _, f := range fs {
		if !f.Verified || f.Kind == FindingComputed || f.URL == "" {
			continue
		}
		if _, ok := ix.num[f.ID]; ok {
			continue
		}
		ix.list = append(ix.list, f)
		ix.num[f.ID] = len(ix.list)
	}
	return ix
}

// lookup resolves a citation by evidence id for the citation check.
func (ix evidenceIndex) lookup(n int) (citation.Evidence, bool) {
	if n < 1 || n > len(ix.list) {
		return citation.Evidence{}, false
	}
	f := ix.list[n-1]
	return citation.Evidence{Quote: f.Quote, Title: f.Title, URL: f.URL, Claim: f.Claim}, true
}

// checkDraft checks a draft's citations against the pages read in the
// thread: evidence cited by id is written from its record, and a quote a
// page does not have may still stand for the evidence of that page it
// restates (its claim, or a researcher's statement tagged with it).
func checkDraft(draft string, s State, ix evidenceIndex, mode citation.Mode) (string, citation.Report) {
	look := lookup(s.Sources)
	at := map[string][]citation.Evidence{}
	add := func(f Finding, claim string) {
		u := f.URL
		if doc, ok := look(u); ok {
			u = doc.URL
		}
		at[u] = append(at[u], citation.Evidence{Quote: f.Quote, Title: f.Title, URL: f.URL, Claim: claim})
	}
	for _, f := range ix.list {
		add(f, f.Claim)
	}
	// a researcher's statement stands for the evidence it is tagged with:
	// a writer that quotes it quotes that evidence in other words
	for _, r := range turnResults(s) {
		for _, st := range r.Statements {
			for _, id := range st.Evidence {
				if n, ok := ix.num[id]; ok {
					add(ix.list[n-1], st.Text)
				}
			}
		}
	}
	return citation.Check(draft, look, citation.Options{Mode: mode, Language: s.Language, Evidence: ix.lookup,
		EvidenceAt: func(u string) []citation.Evidence { return at[u] }})
}

func (ix evidenceIndex) prompt(n int) prompts.Evidence {
	f := ix.list[n-1]
	return prompts.Evidence{N: n, Claim: f.Claim, Quote: f.Quote, Title: f.Title, URL: f.URL}
}

// Statement is one sentence of a researcher's answer with the evidence it
// rests on (finding IDs). The writer sees answers only as statements: no
// headings, footnotes, URLs or quotations of the researcher's own, which a
// model would otherwise cite instead of the sources.
type Statement struct {
	Text     string   `json:"text"`
	Evidence []string `json:"evidence,omitempty"`
}

var (
	// "[E3]", "[E3, E5]", "(E3)", "【E3】" in an answer
	answerTagRE = regexp.MustCompile(`[\[【(（]\s*[Ee][-\s]?\d{1,4}(?:\s*[,;，、；]\s*[Ee]?[-\s]?\d{1,4})*\s*[\]】)）]`)
	tagNumRE    = regexp.MustCompile(`\d{1,4}`)
	footDefRE   = regexp.MustCompile(`^\s*\[\^[^\]\s]+\]:`)
	mdLinkRE    = regexp.MustCompile(`\[([^\[\]\n]*)\]\([^()\s]*\)`)
	bareURLRE   = regexp.MustCompile(`\(?<?(?:https?|doc)://[^\s<>()\[\]]+>?\)?`)
	refHeadRE   = regexp.MustCompile(`(?i)^#{1,6}\s*(references|sources|参考文献|出典|参照|情報源)`)
)

// answerStatements splits a researcher's answer into statements: each
// sentence keeps the evidence it is tagged with, the answer's local
// numbers ("[E3]" is local[2]) turned into finding IDs; tags the
// researcher was never given are dropped, and so are headings, footnote
// definitions, reference lists, links' URLs and quotation marks.
func answerStatements(answer string, local []string) []Statement {
	var out []Statement
	for _, sn := range sentences(answerProse(answer)) {
		ids := taggedIDs(sn, local)
		body := strings.Join(strings.Fields(answerTagRE.ReplaceAllString(sn, "")), " ")
		body = strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(body, " .", "."), " 。", "。"))
		if strings.Trim(body, ".。,、;:()（） ") == "" {
			// tags standing alone after a sentence's end belong to it
			if len(out) > 0 {
				last := &out[len(out)-1]
				for _, id := range ids {
					if !slices.Contains(last.Evidence, id) {
						last.Evidence = append(last.Evidence, id)
					}
				}
			}
			continue
		}
		out = append(out, Statement{Text: body, Evidence: ids})
	}
	return out
}

// answerProse is an answer's text without its reference list, headings,
// footnote definitions, code fences, rules, list markers, links' URLs,
// citation markers and emphasis or quotation marks.
func answerProse(answer string) string {
	var kept []string
	for _, ln := range strings.Split(answer, "\n") {
		t := strings.TrimSpace(ln)
		if refHeadRE.MatchString(t) {
			break // the answer's own reference list
		}
		if strings.HasPrefix(t, "#") || footDefRE.MatchString(t) || strings.HasPrefix(t, "```") || strings.Trim(t, "-*_= ") == "" {
			kept = append(kept, "")
			continue
		}
		t = strings.TrimLeft(t, "-*+> ")
		if k := strings.IndexFunc(t, func(r rune) bool { return r < '0' || r > '9' }); k > 0 && k <= 3 && strings.HasPrefix(t[k:], ". ") {
			t = t[k+2:] // "1. "
		}
		kept = append(kept, t)
	}
	text := strings.Join(kept, "\n")
	text = mdLinkRE.ReplaceAllString(text, "$1")
	text = citationMarker.ReplaceAllString(text, "")
	text = bareURLRE.ReplaceAllString(text, "")
	return strings.NewReplacer("**", "", "__", "", "\"", "", "“", "", "”", "", "`", "").Replace(text)
}

// taggedIDs are the finding IDs a sentence's evidence tags name, by the
// answer's local numbers ("[E3]" is local[2]); numbers never given out
// are dropped.
func taggedIDs(sn string, local []string) []string {
	var ids []string
	for _, tag := range answerTagRE.FindAllString(sn, -1) {
		for _, d := range tagNumRE.FindAllString(tag, -1) {
			n, _ := strconv.Atoi(d) // \d{1,4} always parses
			if n >= 1 && n <= len(local) && !slices.Contains(ids, local[n-1]) {
				ids = append(ids, local[n-1])
			}
		}
	}
	return ids
}

// localEvidence lists the finding IDs a researcher's answer numbered
// [E1], [E2], … (the order of evidenceOf).
func localEvidence(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		if f.Verified {
			out = append(out, f.ID)
		}
	}
	return out
}

// writerInput is what the writer is given: each subtask's answer as
// statements tagged with the run's evidence numbers, and the evidence list
// — every piece of evidence a statement rests on, then the most recent
// others up to max.
func writerInput(s State, limit int) ([]prompts.SubtaskAnswer, []prompts.Evidence, evidenceIndex) {
	ix := indexEvidence(s.Findings)
	var subs []prompts.SubtaskAnswer
	ev := shownEvidence{ix: ix, listed: map[int]bool{}}
	for _, r := range turnResults(s) {
		sts := r.Statements
		if len(sts) == 0 && strings.TrimSpace(r.Answer) != "" {
			sts = answerStatements(r.Answer, nil) // a checkpoint from before statements
		}
		var b strings.Builder
		for _, st := range sts {
			if tags := ev.tags(st.Evidence); len(tags) > 0 {
				fmt.Fprintf(&b, "- %s [%s]\n", st.Text, strings.Join(tags, ", "))
			} else {
				fmt.Fprintf(&b, "- %s (no evidence)\n", st.Text)
			}
		}
		if b.Len() > 0 {
			subs = append(subs, prompts.SubtaskAnswer{Title: r.Title, Answer: strings.TrimRight(b.String(), "\n")})
		}
	}
	for _, f := range recentFirst(s) {
		if limit > 0 && len(ev.nums) >= limit {
			break
		}
		if n, ok := ix.num[f.ID]; ok {
			ev.list(n)
		}
	}
	slices.Sort(ev.nums)
	out := make([]prompts.Evidence, 0, len(ev.nums))
	for _, n := range ev.nums {
		out = append(out, ix.prompt(n))
	}
	return subs, out, ix
}

// shownEvidence collects the evidence numbers the writer is shown, once
// each.
type shownEvidence struct {
	ix     evidenceIndex
	listed map[int]bool
	nums   []int
}

// list adds evidence n unless it is listed.
func (l *shownEvidence) list(n int) {
	if !l.listed[n] {
		l.listed[n] = true
		l.nums = append(l.nums, n)
	}
}

// tags are the run's evidence numbers ("E12") of the findings ids, listed.
func (l *shownEvidence) tags(ids []string) []string {
	var tags []string
	for _, id := range ids {
		if n, ok := l.ix.num[id]; ok {
			tags = append(tags, "E"+strconv.Itoa(n))
			l.list(n)
		}
	}
	return tags
}

// reviewEvidence is the evidence the reviewer is shown, numbered as the
// writer's.
func reviewEvidence(s State, limit int) []prompts.Evidence {
	_, ev, _ := writerInput(s, limit)
	return ev
}

// citeByID turns the footnotes of a checked draft back into evidence ids
// for the writer's next version: "[^2]" whose footnote quotes evidence 12 at
// its URL becomes "[E12]" and the footnote goes. Footnotes that match no
// evidence stay as they are (the check verifies them again).
func citeByID(draft string, ix evidenceIndex) string {
	if draft == "" || len(ix.list) == 0 {
		return draft
	}
	lines := strings.Split(draft, "\n")
	ids := map[string]int{}
	var kept []string
	for _, ln := range lines {
		if m := footDefLabelRE.FindStringSubmatch(ln); m != nil {
			if n := ix.match(m[2]); n > 0 {
				ids[m[1]] = n
				continue
			}
		}
		kept = append(kept, ln)
	}
	if len(ids) == 0 {
		return draft
	}
	out := strings.Join(kept, "\n")
	out = citationMarker.ReplaceAllStringFunc(out, func(mk string) string {
		if n, ok := ids[mk[2:len(mk)-1]]; ok {
			return "[E" + strconv.Itoa(n) + "]"
		}
		return mk
	})
	// a References heading left with nothing under it goes too
	if i := strings.LastIndex(out, "\n## References"); i >= 0 && strings.TrimSpace(out[i+len("\n## References"):]) == "" {
		out = out[:i]
	}
	return strings.TrimRight(out, "\n") + "\n"
}

var footDefLabelRE = regexp.MustCompile(`^\s{0,3}\[\^([^\]\s]+)\]:\s?(.*)$`)

// match finds the evidence a rendered footnote cites: its URL and quote.
func (ix evidenceIndex) match(def string) int {
	flat := strings.Join(strings.Fields(def), "")
	for i, f := range ix.list {
		q := strings.Join(strings.Fields(f.Quote), "")
		if q != "" && strings.Contains(flat, f.URL) && strings.Contains(flat, q) {
			return i + 1
		}
	}
	return 0
}
