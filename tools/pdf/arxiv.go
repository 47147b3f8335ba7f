package pdf

import (
	"net/url"
	"regexp"
	"strings"
)

var (
	arxivNewID = regexp.MustCompile(`^\d{4}\.\d{4,5}(v\d+)?$`)
	arxivOldID = regexp.MustCompile(`^[a-z]+(-[a-z]+)*(\.[A-Z]{2})?/\d{7}(v\d+)?$`)
)

// ArxivHTMLURL maps an arXiv abstract or PDF URL to the paper's HTML
// rendering, which extracts far better than its PDF:
//
//	https://arxiv.org/abs/2401.01234v2   -> https://arxiv.org/html/2401.01234v2
//	http://arxiv.org/pdf/2401.01234.pdf  -> https://arxiv.org/html/2401.01234
//	https://export.arxiv.org/abs/hep-th/9901001 -> https://arxiv.org/html/hep-th/9901001
//
// ok is false for anything else (other hosts, /html/ already, listing
// pages, malformed IDs). arXiv has HTML only for papers it could convert
// (most submitted since December 2023), so the caller should fetch the HTML
// URL first and fall back to the original URL on a 404.
func ArxivHTMLURL(raw string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil {
		return "", false
	}
	switch strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")) {
	case "arxiv.org", "www.arxiv.org", "export.arxiv.org":
	default:
		return "", false
	}
	if p := u.Port(); p != "" && p != "80" && p != "443" {
		return "", false
	}
	path := strings.TrimSuffix(u.Path, "/")
	var id string
	switch {
	case strings.HasPrefix(path, "/abs/"):
		id = strings.TrimPrefix(path, "/abs/")
	case strings.HasPrefix(path, "/pdf/"):
		id = strings.TrimSuffix(strings.TrimPrefix(path, "/pdf/"), ".pdf")
	default:
		return "", false
	}
	if !arxivNewID.MatchString(id) && !arxivOldID.MatchString(id) {
		return "", false
	}
	return "https://arxiv.org/html/" + id, true
}
