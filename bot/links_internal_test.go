package bot

import "testing"

func TestCardSourceText(t *testing.T) {
	for _, tc := range []struct{ title, url, want string }{
		{"Vendor support", "https://vendor.example/support", "Vendor support"},
		{"", "https://vendor.example/support", "https://vendor.example/support"},
		{"https://accounts.google.com/ServiceLogin", "https://evil.example/p/spoof-title", "evil.example"},
		{"accounts.google.com", "https://EVIL.example:8443/p", "evil.example"},
		{"apple.com", "https://аррӏе.com/login", "xn--80ak6aa92e.com"},
		{"vendor.example — docs", "https://docs.vendor.example/", "vendor.example — docs"},
		{"<https://evil.example|x>", "https://good.example/", "good.example"},
	} {
		if got := cardSourceText(tc.title, tc.url); got != tc.want {
			t.Errorf("cardSourceText(%q, %q) = %q, want %q", tc.title, tc.url, got, tc.want)
		}
	}
}
