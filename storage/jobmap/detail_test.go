package jobmap_test

import (
	"testing"

	"deepresearch/research"
	"deepresearch/storage/jobmap"
)

func TestReadRunDetailBad(t *testing.T) {
	var r research.Run
	if err := jobmap.ReadRunDetail(&r, []byte(`{"Question":`), nil, nil); err == nil {
		t.Error("truncated detail read without an error")
	}
}
