package memstore_test

import (
	"testing"

	"deepresearch/graph"
	"deepresearch/storage/memstore"
	"deepresearch/storage/storagetest"
)

func TestConformance(t *testing.T) {
	open := func(t *testing.T, o storagetest.Options) graph.Saver {
		return memstore.New(memstore.Options{MaxRecordBytes: o.MaxRecordBytes, Now: o.Now})
	}
	storagetest.Run(t, storagetest.Harness{
		New: open,
		Pair: func(t *testing.T, o storagetest.Options) (graph.Saver, graph.Saver) {
			s := open(t, o)
			return s, s
		},
	})
}
