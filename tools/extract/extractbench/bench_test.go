package extractbench

import (
	"os"
	"path/filepath"
	"testing"
)

// corpusPages loads the benchmark pages beside the repository, or skips.
func corpusPages(b *testing.B) []Page {
	var dirs []string
	for _, d := range DefaultDirs {
		d = filepath.Join("..", "..", "..", d)
		if _, err := os.Stat(filepath.Join(d, "ground-truth.json")); err == nil {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		b.Skip("benchmark data not found beside the repository")
	}
	pages, err := LoadDirs(dirs)
	if err != nil {
		b.Fatal(err)
	}
	return pages
}

// BenchmarkCorpus extracts the benchmark pages (scrapinghub and wcxb-dev),
// one page per iteration; ns/op is the time per page. With -cpu 2 the
// pages are extracted on two goroutines at once (b.RunParallel), which is
// the time per page on two cores.
func BenchmarkCorpus(b *testing.B) {
	pages := corpusPages(b)
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			p := pages[i%len(pages)]
			if _, err := Ours(p.HTML, p.URL); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				p := pages[i%len(pages)]
				if _, err := Ours(p.HTML, p.URL); err != nil {
					b.Error(err)
					return
				}
				i += 7
			}
		})
	})
}
