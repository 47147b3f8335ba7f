package agent

import "deepresearch/agent/links"

// readLinks is the set of addresses a thread read (as fetched and where
// they led): the only ones its report may link.
func readLinks(sources map[string]Source) links.Set {
	var urls []string
	for _, src := range sources {
		if !src.Retrieved {
			continue
		}
		urls = append(urls, src.URL)
		if src.FinalURL != "" {
			urls = append(urls, src.FinalURL)
		}
	}
	return links.NewSet(urls...)
}

// honestLinks rewrites what a turn hands out (the report, its summary, a
// reply, a draft shown for approval) so that only the sources read are links and no
// link's text shows another address; any other link, Slack syntax or
// address the model wrote is left as inert text (links.Markdown).
func honestLinks(r *Result, sources map[string]Source) {
	set := readLinks(sources)
	r.Report = links.Markdown(r.Report, set)
	r.Summary = links.Markdown(r.Summary, set)
	r.Reply = links.Markdown(r.Reply, set)
	for i := range r.Interrupts {
		r.Interrupts[i].Draft = links.Markdown(r.Interrupts[i].Draft, set)
		r.Interrupts[i].Summary = links.Markdown(r.Interrupts[i].Summary, set)
	}
}
