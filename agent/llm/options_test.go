package llm

import (
	"testing"
)

func TestPriceLookup(t *testing.T) {
	prices := map[string]Price{"gpt-4o": {1, 1}, "gpt-4o-mini": {2, 2}}
	for model, want := range map[string]float64{"gpt-4o": 1, "gpt-4o-2024-08-06": 1, "gpt-4o-mini-2024-07-18": 2, "llama": 0} {
		p, _ := priceFor(prices, model)
		if p.Prompt != want {
			t.Errorf("%s: %v", model, p)
		}
	}
	if got := (Price{Prompt: 2.5, Completion: 10}).Cost(1_000_000, 100_000); got != 3.5 {
		t.Errorf("cost = %v", got)
	}
}
