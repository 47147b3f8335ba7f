// Command corpus converts other projects' news-extraction test data into
// the folder layout the extraction benchmark reads (ground-truth.json plus
// html/<id>.html.gz, as in shared/bench/extraction), so that the extractor
// can be scored on news pages it was never developed on. None of the
// converted data is in this repository; point -src at a checkout.
//
//	cd bench/extraction
//	go run ./corpus -from fundus -src /path/to/fundus -out /tmp/fundus-check -half check
//	go run ./corpus -from newspaper -src /path/to/newspaper -out /tmp/np
//	go run . /tmp/fundus-check
//
// Sources:
//
//   - fundus (github.com/flairNLP/fundus, tests/resources/parser/test_data):
//     news articles from a few hundred publishers in about forty countries,
//     each with the output its hand-written publisher parser must give. The
//     truth is the body's sections (their headlines and paragraphs); the
//     "summary" (standfirst) is left out, as scrapinghub's articleBody
//     leaves it out, unless -summary is set. Pages are split into two
//     halves by publisher (-half): "tune" may be looked at page by page,
//     "check" only ever gives its pooled figures.
//   - newspaper (github.com/codelucas/newspaper, tests/data): news and
//     magazine pages with the text python newspaper extracts from them. That
//     truth is one extractor's output, so it is noisy; it shows pages where
//     an extractor fails outright more than it ranks good ones. Texts under
//     500 characters (pages newspaper itself failed on) are skipped.
package main

import (
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// truth is one page's entry in ground-truth.json.
type truth struct {
	ArticleBody string `json:"articleBody"`
	URL         string `json:"url"`
	Source      string `json:"source"`
}

// page is one converted page: its id, truth and gzip-compressed HTML.
type page struct {
	id     string
	t      truth
	htmlGz []byte
}

func main() {
	from := flag.String("from", "", "fundus or newspaper")
	src := flag.String("src", "", "checkout of the source repository")
	out := flag.String("out", "", "folder to write ground-truth.json and html/ into")
	half := flag.String("half", "all", "fundus: tune, check or all (split by publisher)")
	summary := flag.Bool("summary", false, "fundus: keep the body's summary (standfirst) in the truth")
	flag.Parse()
	if err := run(*from, *src, *out, *half, *summary); err != nil {
		fmt.Fprintln(os.Stderr, "corpus:", err)
		os.Exit(1)
	}
}

func run(from, src, out, half string, summary bool) error {
	if src == "" || out == "" {
		return errors.New("-src and -out are required")
	}
	var pages []page
	var err error
	switch from {
	case "fundus":
		pages, err = fundus(filepath.Join(src, "tests", "resources", "parser", "test_data"), half, summary)
	case "newspaper":
		pages, err = newspaper(filepath.Join(src, "tests", "data"))
	default:
		return fmt.Errorf("-from %q: want fundus or newspaper", from)
	}
	if err != nil {
		return err
	}
	if err := write(out, pages); err != nil {
		return err
	}
	fmt.Printf("%d pages written to %s\n", len(pages), out)
	return nil
}

// write stores pages in dir as the benchmark reads them.
func write(dir string, pages []page) error {
	if err := os.MkdirAll(filepath.Join(dir, "html"), 0o755); err != nil {
		return err
	}
	gt := make(map[string]truth, len(pages))
	for _, p := range pages {
		gt[p.id] = p.t
		if err := os.WriteFile(filepath.Join(dir, "html", p.id+".html.gz"), p.htmlGz, 0o644); err != nil {
			return err
		}
	}
	b, err := json.MarshalIndent(gt, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "ground-truth.json"), b, 0o644)
}

// gzipped compresses data.
func gzipped(data []byte) ([]byte, error) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// fundusBody is the "body" of fundus's expected output.
type fundusBody struct {
	Summary  []string `json:"summary"`
	Sections []struct {
		Headline   []string `json:"headline"`
		Paragraphs []string `json:"paragraphs"`
	} `json:"sections"`
}

// fundusMeta is one entry of a country folder's meta.info.
type fundusMeta struct {
	URL       string `json:"url"`
	CrawlDate string `json:"crawl_date"`
}

// fundus reads every country folder under dir. A publisher's <Name>.json
// maps parser versions (V1, V1_1, V2, …) to the output expected of its
// test pages <Name>_<date>.html.gz; fundus picks the parser version by
// crawl date, so versions in order pair with the publisher's pages in
// order of crawl date. A publisher whose counts differ is skipped.
func fundus(dir, half string, summary bool) ([]page, error) {
	if half != "all" && half != "tune" && half != "check" {
		return nil, fmt.Errorf("-half %q: want tune, check or all", half)
	}
	countries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var pages []page
	for _, c := range countries {
		metaPath := filepath.Join(dir, c.Name(), "meta.info")
		b, err := os.ReadFile(metaPath)
		if err != nil {
			continue
		}
		var meta map[string]fundusMeta
		if err := json.Unmarshal(b, &meta); err != nil {
			return nil, fmt.Errorf("%s: %w", metaPath, err)
		}
		ps, err := fundusCountry(filepath.Join(dir, c.Name()), c.Name(), meta, half, summary)
		if err != nil {
			return nil, err
		}
		pages = append(pages, ps...)
	}
	return pages, nil
}

func fundusCountry(dir, country string, meta map[string]fundusMeta, half string, summary bool) ([]page, error) {
	jsons, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var pages []page
	for _, jf := range jsons {
		pub := strings.TrimSuffix(filepath.Base(jf), ".json")
		if half != "all" && fundusHalf(pub) != half {
			continue
		}
		b, err := os.ReadFile(jf)
		if err != nil {
			return nil, err
		}
		var versions map[string]struct {
			Body *fundusBody `json:"body"`
		}
		if err := json.Unmarshal(b, &versions); err != nil {
			return nil, fmt.Errorf("%s: %w", jf, err)
		}
		files := publisherFiles(dir, pub, meta)
		names := make([]string, 0, len(versions))
		for v := range versions {
			names = append(names, v)
		}
		sort.Slice(names, func(i, j int) bool { return versionLess(names[i], names[j]) })
		if len(files) != len(names) {
			continue
		}
		for i, f := range files {
			body := versions[names[i]].Body
			if body == nil {
				continue
			}
			text := body.text(summary)
			if utf8.RuneCountInString(text) < 300 {
				continue
			}
			// The test page is gzip-compressed already, as the
			// benchmark reads it.
			gz, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				return nil, err
			}
			pages = append(pages, page{
				id:     "fundus-" + country + "-" + strings.TrimSuffix(f, ".html.gz"),
				t:      truth{ArticleBody: text, URL: meta[f].URL, Source: "fundus-" + country},
				htmlGz: gz,
			})
		}
	}
	return pages, nil
}

// publisherFiles are pub's test pages that meta.info lists and that exist,
// in order of crawl date.
func publisherFiles(dir, pub string, meta map[string]fundusMeta) []string {
	var files []string
	for f := range meta {
		if !strings.HasPrefix(f, pub+"_") {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			files = append(files, f)
		}
	}
	sort.Slice(files, func(i, j int) bool { return meta[files[i]].CrawlDate < meta[files[j]].CrawlDate })
	return files
}

func (b *fundusBody) text(summary bool) string {
	var parts []string
	if summary {
		parts = append(parts, b.Summary...)
	}
	for _, s := range b.Sections {
		parts = append(parts, s.Headline...)
		parts = append(parts, s.Paragraphs...)
	}
	return strings.Join(parts, "\n\n")
}

var digits = regexp.MustCompile(`\d+`)

// versionLess orders parser versions by their numbers: V1 < V1_1 < V2.
func versionLess(a, b string) bool {
	na, nb := digits.FindAllString(a, -1), digits.FindAllString(b, -1)
	for i := 0; i < len(na) && i < len(nb); i++ {
		x, _ := strconv.Atoi(na[i])
		y, _ := strconv.Atoi(nb[i])
		if x != y {
			return x < y
		}
	}
	if len(na) != len(nb) {
		return len(na) < len(nb)
	}
	return a < b
}

// fundusHalf puts a publisher in "tune" or "check" by the low bit of the
// MD5 of its name, so that one publisher's pages are never in both.
func fundusHalf(pub string) string {
	if md5.Sum([]byte(pub))[15]&1 == 0 {
		return "tune"
	}
	return "check"
}

// newspaper pairs text/<name>.txt with html/<name>.html.
func newspaper(dir string) ([]page, error) {
	texts, err := filepath.Glob(filepath.Join(dir, "text", "*.txt"))
	if err != nil {
		return nil, err
	}
	var pages []page
	for _, tf := range texts {
		name := strings.TrimSuffix(filepath.Base(tf), ".txt")
		html, err := os.ReadFile(filepath.Join(dir, "html", name+".html"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		body, err := os.ReadFile(tf)
		if err != nil {
			return nil, err
		}
		if utf8.RuneCountInString(string(body)) < 500 {
			continue
		}
		gz, err := gzipped(html)
		if err != nil {
			return nil, err
		}
		pages = append(pages, page{
			id:     "np-" + name,
			t:      truth{ArticleBody: string(body), Source: "newspaper"},
			htmlGz: gz,
		})
	}
	return pages, nil
}
