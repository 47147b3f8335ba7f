package graph_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"deepresearch/graph"
	"deepresearch/graph/memsaver"
)

func BenchmarkChain50(b *testing.B) {
	for _, saver := range []bool{false, true} {
		b.Run(fmt.Sprint("saver=", saver), func(b *testing.B) {
			opts := graph.Options{}
			if saver {
				opts.Saver = memsaver.New(memsaver.Options{})
			}
			g := buildChain(b, 50, opts, nil)
			in := []graph.Write{{Channel: "count", Value: 0}}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := g.Invoke(context.Background(), graph.Config{ThreadID: fmt.Sprint("b", i), Input: in}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkFanOut256(b *testing.B) {
	var runs struct{ v atomic.Int64 }
	g := buildFan(b, 256, graph.Options{}, &runs.v, nil)
	in := []graph.Write{{Channel: "total", Value: 0}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Invoke(context.Background(), graph.Config{Input: in}); err != nil {
			b.Fatal(err)
		}
	}
}
