package extract

import (
	"strings"
	"testing"
)

func TestFixMojibake(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain ascii", "plain ascii"},
		{"already right: dog’s café 日本", "already right: dog’s café 日本"},
		{"A dog\u00e2\u0080\u0099s vet bills", "A dog’s vet bills"},    // via Latin-1
		{"dogâ€™s bills â€” cafÃ© naÃ¯ve", "dog’s bills — café naïve"}, // via windows-1252
		{"Â°C and Â£5", "°C and £5"},
		{"emoji ðŸ˜€ here", "emoji 😀 here"},
		{"Ã alone, Ã© then Ã", "Ã alone, é then Ã"},
		{"ends with â€", "ends with â€"},
		{"Ã and ©", "Ã and ©"},
	}
	for _, tt := range tests {
		if got := string(fixMojibake([]byte(tt.in))); got != tt.want {
			t.Errorf("fixMojibake(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestExtractRepairsMojibake(t *testing.T) {
	page := "<html><head><meta charset=\"utf-8\"><title>Pet costs</title></head><body><article><p>A dog\u00e2\u0080\u0099s vet bills " +
		`usually outpace a catâ€™s, so canine coverage costs a bit more â€” but species is one of several moving parts.</p></article></body></html>`
	a, err := ExtractBytes([]byte(page), "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "A dog’s vet bills usually outpace a cat’s, so canine coverage costs a bit more — but"; !strings.Contains(a.Text, want) {
		t.Errorf("text %q lacks %q", a.Text, want)
	}
}
