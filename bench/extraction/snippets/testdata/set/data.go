package benchmark

var comparisonData = []ComparisonEntry{
	{
		URL:     "https://example.org/a",
		File:    "a.html",
		Title:   "ignored",
		With:    []string{"the harbour opened", "ferries   run"},
		Without: []string{"Subscribe"},
	}, {
		URL:  "https://example.org/b",
		File: "b.html",
		With: []string{"second page"},
	}, {
		URL:  "https://example.org/missing",
		File: "missing.html",
		With: []string{"no file"},
	},
}
