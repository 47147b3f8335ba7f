package dataviz

import (
	"fmt"
	"strings"
)

// Markdown writes the table as a markdown table whose every value is
// followed by its citations, cite(n) for evidence n ("[E3]"); a computed
// value cites the values it was computed from. Empty cells are "–".
func Markdown(t *Table, cite func(n int) string) string {
	var b strings.Builder
	title := t.Title
	if t.Unit != "" {
		title = strings.TrimSpace(fmt.Sprintf("%s (%s)", title, t.Unit))
	}
	if title != "" {
		fmt.Fprintf(&b, "**%s**\n\n", title)
	}
	b.WriteString("| |")
	for _, c := range t.Columns {
		b.WriteString(" " + c + " |")
	}
	b.WriteString("\n|---|")
	for range t.Columns {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		b.WriteString("| " + r + " |")
		for _, c := range t.Columns {
			cell, ok := t.Get(r, c)
			if !ok {
				b.WriteString(" – |")
				continue
			}
			var cites []string
			for _, n := range cell.Evidence {
				cites = append(cites, cite(n))
			}
			fmt.Fprintf(&b, " %s %s |", cell.Shown, strings.Join(cites, ""))
		}
		b.WriteString("\n")
	}
	return b.String()
}
