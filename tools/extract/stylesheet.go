package extract

import (
	"iter"
	"strings"

	"golang.org/x/net/html"
)

// sheet is what the page's <style> elements say hides an element: rules of
// a simple selector (".class", "#id", "tag.class", "tag#id") whose
// declarations hide it (see sheetHiding). A class or id that any other rule
// shows again (".tab.active{display:block}", a media query that shows it on
// wide screens) is not hidden: a script or the screen's size shows it.
type sheet struct {
	// hide maps a class (".x") or id ("#x") to the tags it hides ("" for
	// every tag) and how (hideShowable, hideForGood); classes and ids
	// hold the same by the bare name, for looking up without allocating.
	hide, classes, ids map[string]map[string]int
	// shown are the classes and ids that some rule shows again.
	shown map[string]bool
}

// Bounds on what is read of a page's style sheets: pages can be 10 MB,
// most of it inlined CSS.
const (
	maxSheetBytes = 256 << 10
	maxSheetRules = 5000
)

// readSheet reads the <style> elements of the document that n is in.
func readSheet(n *html.Node) sheet {
	for n.Parent != nil {
		n = n.Parent
	}
	r := sheetReader{s: sheet{hide: map[string]map[string]int{}, shown: map[string]bool{}}}
	var walk func(n *html.Node, depth int)
	walk = func(n *html.Node, depth int) {
		for c := n.FirstChild; c != nil && r.budget(); c = c.NextSibling {
			if c.Type != html.ElementNode || depth > maxDepth {
				continue
			}
			switch c.Data {
			case "style":
				// A sheet for some screens only ("(min-width: 1080px)",
				// print) can only show an element again.
				media := strings.ToLower(attr(c, "media"))
				top := !strings.Contains(media, "(") && !strings.Contains(media, "print") && !strings.Contains(media, "speech")
				if t := c.FirstChild; t != nil && t.Type == html.TextNode {
					css := t.Data
					if left := maxSheetBytes - r.bytes; len(css) > left {
						css = css[:left]
					}
					r.bytes += len(css)
					r.rules(stripComments(css), top)
				}
			case "script", "template", "svg", "noscript":
			default:
				walk(c, depth+1)
			}
		}
	}
	walk(n, 0)
	r.s.classes, r.s.ids = map[string]map[string]int{}, map[string]map[string]int{}
	for k, tags := range r.s.hide {
		if r.s.shown[k] {
			continue
		}
		if k[0] == '.' {
			r.s.classes[k[1:]] = tags
		} else {
			r.s.ids[k[1:]] = tags
		}
	}
	r.s.hide = nil
	return r.s
}

// sheetReader reads style sheets into s within the bounds above.
type sheetReader struct {
	s            sheet
	bytes, count int
}

func (r *sheetReader) budget() bool {
	return r.bytes < maxSheetBytes && r.count < maxSheetRules
}

// rules reads a list of rules. top reports rules that apply on every
// screen; the rules of a conditional group (a media query with a
// condition, @supports) can only show an element again.
func (r *sheetReader) rules(css string, top bool) {
	for css != "" && r.count < maxSheetRules {
		i := strings.IndexAny(css, "{;}")
		if i < 0 {
			return
		}
		if css[i] != '{' {
			css = css[i+1:]
			continue
		}
		prelude := strings.TrimSpace(css[:i])
		body, rest := ruleBody(css[i+1:])
		css = rest
		r.count++
		if strings.HasPrefix(prelude, "@") {
			name, query, _ := strings.Cut(prelude, " ")
			switch strings.ToLower(name) {
			case "@media":
				// "@media screen" applies on every screen; "@media
				// (min-width: 40em)" on some only.
				r.rules(body, top && !strings.Contains(query, "(") && !strings.Contains(strings.ToLower(query), "print"))
			case "@supports", "@layer", "@container":
				r.rules(body, false)
			}
			continue
		}
		r.rule(prelude, body, top)
	}
}

// rule reads one rule: the selectors of prelude and the declarations of
// body.
func (r *sheetReader) rule(prelude, body string, top bool) {
	how := sheetHiding(body)
	shows := how == hideNot && showsAgain(body)
	if how == hideNot && !shows {
		return
	}
	for _, sel := range strings.Split(prelude, ",") {
		sel = strings.TrimSpace(sel)
		if shows || !top {
			if shows {
				for _, k := range lastCompoundNames(sel) {
					r.s.shown[k] = true
				}
			}
			continue
		}
		tag, key, ok := simpleSelector(sel)
		if !ok {
			continue
		}
		tags := r.s.hide[key]
		if tags == nil {
			tags = map[string]int{}
			r.s.hide[key] = tags
		}
		tags[tag] = max(tags[tag], how)
	}
}

// ruleBody splits css, which follows a rule's "{", at its matching "}".
func ruleBody(css string) (body, rest string) {
	depth := 1
	for i := 0; i < len(css); i++ {
		switch css[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return css[:i], css[i+1:]
			}
		}
	}
	return css, ""
}

// stripComments removes /* … */ comments from css.
func stripComments(css string) string {
	if !strings.Contains(css, "/*") {
		return css
	}
	var b strings.Builder
	for {
		i := strings.Index(css, "/*")
		if i < 0 {
			b.WriteString(css)
			return b.String()
		}
		b.WriteString(css[:i])
		j := strings.Index(css[i+2:], "*/")
		if j < 0 {
			return b.String()
		}
		b.WriteByte(' ')
		css = css[i+2+j+2:]
	}
}

// simpleSelector parses ".x", "#x", "tag.x" and "tag#x" into the tag ("" for
// any) and the key of the class (".x") or id ("#x"); ok is false for any
// other selector.
func simpleSelector(sel string) (tag, key string, ok bool) {
	i := strings.IndexAny(sel, ".#")
	if i < 0 || i == len(sel)-1 {
		return "", "", false
	}
	tag, key = strings.ToLower(sel[:i]), sel[i:]
	for _, r := range tag {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return "", "", false
		}
	}
	for _, r := range key[1:] {
		if !nameRune(r) {
			return "", "", false
		}
	}
	return tag, key, true
}

// nameRune reports a rune that may stand in a class or id of a selector
// unescaped.
func nameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r > 0x7f
}

// lastCompoundNames returns the classes (".x") and ids ("#x") of the last
// compound selector of sel: the element the rule styles.
func lastCompoundNames(sel string) []string {
	if i := strings.LastIndexAny(sel, " >+~"); i >= 0 {
		sel = sel[i+1:]
	}
	var out []string
	for i := 0; i < len(sel); i++ {
		if sel[i] != '.' && sel[i] != '#' {
			continue
		}
		j := i + 1
		for j < len(sel) && nameRune(rune(sel[j])) {
			j++
		}
		if j > i+1 {
			out = append(out, sel[i:j])
		}
		i = j - 1
	}
	return out
}

// sheetHiding reads a rule's declarations for what hides the element it
// styles: what hides an inline style (see styleHiding), and a box placed
// absolutely far off screen or of a pixel that clips its overflow (the
// "screen reader only" tricks without clip). A font size of zero is not
// read: sheets set it on rows of inline blocks to remove the gaps between
// them and set it again on the blocks.
func sheetHiding(decls string) int {
	how := styleHiding(decls)
	if how == hideShowable && !displayNone(decls) {
		// visibility:hidden in a sheet is mostly an animation's start,
		// revealed by a script as the reader scrolls (or an anti-flicker
		// wrapper): read display:none only.
		how = hideNot
	}
	if how == hideForGood || !strings.Contains(decls, "absolute") {
		return how
	}
	tinyW, tinyH, clipped, offscreen := false, false, false, false
	for name, val := range declarations(decls) {
		switch name {
		case "width":
			tinyW = zeroLength(val) || val == "1px"
		case "height":
			tinyH = zeroLength(val) || val == "1px"
		case "overflow":
			clipped = val == "hidden" || val == "clip"
		case "left", "top", "text-indent":
			offscreen = offscreen || farOff(val)
		}
	}
	if tinyW && tinyH && clipped || offscreen {
		return hideForGood
	}
	return how
}

// displayNone reports declarations that set display to none.
func displayNone(decls string) bool {
	for name, val := range declarations(decls) {
		if strings.EqualFold(name, "display") && strings.EqualFold(val, "none") {
			return true
		}
	}
	return false
}

// declarations yields the declarations of a rule's body ("a: b; c: d") as
// name and value, both trimmed and in lower case, the value without its
// !important; a part without a colon is skipped.
func declarations(decls string) iter.Seq2[string, string] {
	return func(yield func(name, val string) bool) {
		for _, decl := range strings.Split(decls, ";") {
			name, val, ok := strings.Cut(decl, ":")
			if !ok {
				continue
			}
			name = strings.ToLower(strings.TrimSpace(name))
			val = strings.ToLower(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(val), "!important")))
			if !yield(name, val) {
				return
			}
		}
	}
}

// farOff reports a negative length of a thousand pixels or more
// ("-9999px", "-10000em").
func farOff(v string) bool {
	n, ok := strings.CutPrefix(v, "-")
	if !ok {
		return false
	}
	digits := len(n) - len(strings.TrimLeft(n, "0123456789"))
	return digits >= 4 && !strings.HasPrefix(n, "0")
}

// showsAgain reports declarations that show an element a rule elsewhere
// hides: a display other than none, visibility visible, a clip or position
// that undoes the screen-reader-only trick.
func showsAgain(decls string) bool {
	for name, val := range declarations(decls) {
		switch name {
		case "display":
			if val != "none" {
				return true
			}
		case "visibility":
			if val == "visible" {
				return true
			}
		case "clip", "clip-path":
			if val == "auto" || val == "none" {
				return true
			}
		case "position":
			if val == "static" || val == "relative" {
				return true
			}
		}
	}
	return false
}

// hiding reports how the sheet hides n (see hiddenBy): "sheet" for what a
// script may show, "invisible" for what is never on screen, else "".
func (s *sheet) hiding(n *html.Node) string {
	if len(s.classes) == 0 && len(s.ids) == 0 {
		return ""
	}
	how := hideNot
	look := func(tags map[string]int) {
		if tags != nil {
			how = max(how, tags[""], tags[n.Data])
		}
	}
	for _, a := range n.Attr {
		switch a.Key {
		case "class":
			for _, c := range strings.Fields(a.Val) {
				look(s.classes[c])
			}
		case "id":
			look(s.ids[a.Val])
		}
	}
	switch how {
	case hideShowable:
		return "sheet"
	case hideForGood:
		return "invisible"
	}
	return ""
}
