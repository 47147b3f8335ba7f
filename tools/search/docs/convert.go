package docs

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// ConvertFunc turns a file's bytes into a title (may be empty) and text.
// The text may use markdown ATX headings ("## Section"): they become the
// passages' headings. tools/extract (HTML) and tools/pdf (PDF) provide
// converters for Options.Converters.
type ConvertFunc func(ctx context.Context, data []byte) (title, text string, err error)

// builtinConverters handle plain text, markdown and (crudely) HTML. PDF
// needs a converter from Options.Converters.
func builtinConverters() map[string]ConvertFunc {
	return map[string]ConvertFunc{
		".md":       convertMarkdown,
		".markdown": convertMarkdown,
		".mdx":      convertMarkdown,
		".txt":      convertText,
		".text":     convertText,
		".html":     convertHTML,
		".htm":      convertHTML,
	}
}

func normExt(ext string) string {
	ext = strings.ToLower(strings.TrimSpace(ext))
	if ext != "" && !strings.HasPrefix(ext, ".") {
		ext = "." + ext
	}
	return ext
}

func toUTF8(data []byte) string {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	s := string(data)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return strings.ReplaceAll(s, "\r\n", "\n")
}

// convertMarkdown strips YAML front matter (keeping its title) and uses the
// first level-1 heading as the title.
func convertMarkdown(_ context.Context, data []byte) (string, string, error) {
	s := toUTF8(data)
	title := ""
	if strings.HasPrefix(s, "---\n") {
		if end := strings.Index(s[4:], "\n---"); end >= 0 {
			front := s[4 : 4+end]
			rest := s[4+end+4:]
			if i := strings.IndexByte(rest, '\n'); i >= 0 {
				rest = rest[i+1:]
			} else {
				rest = ""
			}
			for line := range strings.SplitSeq(front, "\n") {
				if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "title" {
					title = strings.Trim(strings.TrimSpace(v), `"'`)
				}
			}
			s = rest
		}
	}
	if title == "" {
		for line := range strings.SplitSeq(s, "\n") {
			if level, h := atxHeading(strings.TrimSpace(line)); level == 1 {
				title = h
				break
			}
		}
	}
	return title, s, nil
}

// convertText uses a short first line as the title.
func convertText(_ context.Context, data []byte) (string, string, error) {
	s := toUTF8(data)
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if utf8.RuneCountInString(line) <= 80 {
			return line, s, nil
		}
		break
	}
	return "", s, nil
}

// convertHTML is a crude fallback: the <title>, headings as markdown
// headings, block elements as paragraphs, scripts and styles dropped. Use
// tools/extract through Options.Converters for real pages.
func convertHTML(_ context.Context, data []byte) (string, string, error) {
	doc, err := html.Parse(bytes.NewReader(data))
	if err != nil {
		return "", "", err
	}
	var title string
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.DataAtom {
			case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Svg, atom.Iframe, atom.Object:
				return
			case atom.Title:
				if title == "" {
					title = strings.Join(strings.Fields(textOf(n)), " ")
				}
				return
			case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
				if h := strings.Join(strings.Fields(textOf(n)), " "); h != "" {
					level := int(n.Data[1] - '0')
					b.WriteString("\n\n" + strings.Repeat("#", level) + " " + h + "\n\n")
				}
				return
			case atom.Br:
				b.WriteString("\n")
			case atom.P, atom.Div, atom.Li, atom.Tr, atom.Section, atom.Article, atom.Blockquote,
				atom.Pre, atom.Table, atom.Ul, atom.Ol, atom.Dl, atom.Dt, atom.Dd, atom.Header, atom.Footer, atom.Main:
				b.WriteString("\n\n")
				defer b.WriteString("\n\n")
			case atom.Td, atom.Th:
				b.WriteString(" ")
			}
		}
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return title, tidyText(b.String()), nil
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// tidyText collapses runs of spaces within lines and of blank lines.
func tidyText(s string) string {
	var out []string
	blank := true
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.Join(strings.Fields(line), " ")
		if line == "" {
			if !blank {
				out = append(out, "")
			}
			blank = true
			continue
		}
		out = append(out, line)
		blank = false
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

func titleFromPath(rel string) string {
	base := filepath.Base(rel)
	return strings.TrimSuffix(base, filepath.Ext(base))
}
