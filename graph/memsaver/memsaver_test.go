package memsaver_test

import (
	"testing"

	"deepresearch/graph"
	"deepresearch/graph/memsaver"
	"deepresearch/graph/savertest"
)

func TestConformance(t *testing.T) {
	open := func(t *testing.T, o savertest.Options) graph.Saver {
		return memsaver.New(memsaver.Options{MaxRecordBytes: o.MaxRecordBytes, Now: o.Now})
	}
	savertest.Run(t, savertest.Harness{
		New: open,
		Pair: func(t *testing.T, o savertest.Options) (graph.Saver, graph.Saver) {
			s := open(t, o)
			return s, s
		},
	})
}
