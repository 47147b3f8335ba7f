package memstore_test

import (
	"testing"

	"deepresearch/schedule"
	"deepresearch/schedule/memstore"
	"deepresearch/schedule/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) schedule.Store { return memstore.New() })
}
