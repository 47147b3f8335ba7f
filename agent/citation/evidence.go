package citation

import (
	"regexp"
	"strconv"
	"strings"
)

// Evidence is a piece of evidence collected in the run, which a report may
// cite by its id ("[E12]") instead of copying it: the program, not the
// model, then writes the footnote (the exact span read, the title, the
// canonical URL). The quote is still verified against the page like any
// other.
type Evidence struct {
	Quote string
	Title string
	URL   string
}

// EvidenceLookup finds evidence by its number (12 for "E12"); ok is false
// for an id the run never gave out.
type EvidenceLookup func(n int) (Evidence, bool)

var (
	// an evidence id: "E12", "e12", "E 12", "E-12" (what small models write)
	evidenceIDRE = regexp.MustCompile(`^\^?[Ee][-\s]?(\d{1,5})$`)
	// a bracketed group of ids in the text: "[E12]", "[E12, E15]",
	// "[E12][E15]" is two groups, "【E12】", "(E12)", "[^E12]"
	evidenceGroupRE = regexp.MustCompile(`[\[【(（]\s*(\^?[Ee][-\s]?\d{1,5}(?:\s*[,;，、；]\s*\^?[Ee]?[-\s]?\d{1,5})*)\s*[\]】)）]`)
	// a footnote's text that names an id first: "E12", "[E12] …", "(E12)"
	evidenceDefRE = regexp.MustCompile(`^\s*[\[【(（]?\s*[Ee][-\s]?(\d{1,5})\b\s*[\]】)）]?`)
)

// evidenceIDs parses "E12, E15" (and "E12, 15") into numbers; ok is false
// when anything else stands in the group.
func evidenceIDs(s string) ([]int, bool) {
	var out []int
	for _, p := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(",;，、；", r) }) {
		p = strings.TrimSpace(p)
		if p != "" && p[0] >= '0' && p[0] <= '9' {
			p = "E" + p
		}
		m := evidenceIDRE.FindStringSubmatch(p)
		if m == nil {
			return nil, false
		}
		n, _ := strconv.Atoi(m[1])
		out = append(out, n)
	}
	return out, len(out) > 0
}

func evidenceLabel(n int) string { return "E" + strconv.Itoa(n) }

// resolveEvidence turns citations by evidence id into footnotes: "[E12]" in
// the text becomes the marker "[^E12]", and a footnote whose label or text
// names an id ("[^E12]: …", "[^3]: E12", "[^3]: [E12] "…" — …") cites that
// evidence whatever else it says. It returns the text without the
// definitions it replaced and the number each label cites.
func resolveEvidence(report string) (string, map[string]int) {
	lines := strings.Split(report, "\n")
	cites := map[string]int{}
	inFence := false
	out := lines[:0:0]
	for i := 0; i < len(lines); i++ {
		ln := lines[i]
		if strings.HasPrefix(strings.TrimSpace(ln), "```") {
			inFence = !inFence
		}
		if inFence {
			out = append(out, ln)
			continue
		}
		if m := defRE.FindStringSubmatch(ln); m != nil {
			n := 0
			if id := evidenceIDRE.FindStringSubmatch(m[1]); id != nil {
				n, _ = strconv.Atoi(id[1])
			} else if id := evidenceDefRE.FindStringSubmatch(m[2]); id != nil {
				n, _ = strconv.Atoi(id[1])
			}
			if n > 0 {
				if _, seen := cites[m[1]]; !seen {
					cites[m[1]] = n
				}
				for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "    ") && strings.TrimSpace(lines[i+1]) != "" {
					i++
				}
				continue
			}
		}
		ln = evidenceGroupRE.ReplaceAllStringFunc(ln, func(g string) string {
			inner := evidenceGroupRE.FindStringSubmatch(g)[1]
			ns, ok := evidenceIDs(inner)
			if !ok {
				return g
			}
			var b strings.Builder
			for _, n := range ns {
				l := evidenceLabel(n)
				cites[l] = n
				b.WriteString("[^" + l + "]")
			}
			return b.String()
		})
		out = append(out, ln)
	}
	return strings.Join(out, "\n"), cites
}

// evidenceDef is the footnote the program writes for a label that cites
// evidence: defLine renders it from the record.
func evidenceDef(label string, e Evidence) *def {
	return &def{label: label, quote: strings.TrimSpace(e.Quote), title: e.Title, url: e.URL, evidence: true}
}
