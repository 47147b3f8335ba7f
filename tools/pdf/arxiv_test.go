package pdf

import "testing"

func TestArxivHTMLURL(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"https://arxiv.org/abs/2401.01234", "https://arxiv.org/html/2401.01234", true},
		{"https://arxiv.org/abs/2401.01234v2", "https://arxiv.org/html/2401.01234v2", true},
		{"http://arxiv.org/pdf/2401.01234", "https://arxiv.org/html/2401.01234", true},
		{"https://arxiv.org/pdf/2401.01234v3.pdf", "https://arxiv.org/html/2401.01234v3", true},
		{"https://www.arxiv.org/pdf/2312.12345/", "https://arxiv.org/html/2312.12345", true},
		{"https://export.arxiv.org/abs/0704.0001", "https://arxiv.org/html/0704.0001", true},
		{"https://arxiv.org/abs/2401.01234?context=cs#x", "https://arxiv.org/html/2401.01234", true},
		{"https://ARXIV.org/abs/2401.01234", "https://arxiv.org/html/2401.01234", true},
		{"https://arxiv.org/abs/hep-th/9901001", "https://arxiv.org/html/hep-th/9901001", true},
		{"https://arxiv.org/abs/math.GT/0309136v1", "https://arxiv.org/html/math.GT/0309136v1", true},
		{"https://arxiv.org/pdf/cond-mat/0102536.pdf", "https://arxiv.org/html/cond-mat/0102536", true},
		{"https://arxiv.org/html/2401.01234", "", false},
		{"https://arxiv.org/list/cs.AI/recent", "", false},
		{"https://arxiv.org/abs/", "", false},
		{"https://arxiv.org/abs/2401.1", "", false},
		{"https://arxiv.org/abs/2401.01234/../../etc", "", false},
		{"https://arxiv.org/abs/2401.01234%2F..%2F", "", false},
		{"https://evil.example/abs/2401.01234", "", false},
		{"https://arxiv.org.evil.example/abs/2401.01234", "", false},
		{"https://arxiv.org:8080/abs/2401.01234", "", false},
		{"ftp://arxiv.org/abs/2401.01234", "", false},
		{"https://user@arxiv.org/abs/2401.01234", "", false},
		{"not a url", "", false},
	}
	for _, tt := range tests {
		got, ok := ArxivHTMLURL(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ArxivHTMLURL(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
