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
// reply, a plan, question or draft shown for approval) so that only the sources read are links and no
// link's text shows another address; any other link, Slack syntax or
// address the model wrote is left as inert text (links.Markdown).
func honestLinks(r *Result, sources map[string]Source) {
	set := readLinks(sources)
	r.Report = keepChartRefs(links.Markdown(r.Report, set), r.Charts, r.Language, func(s string) string { return links.Markdown(s, set) })
	r.Summary = links.Markdown(r.Summary, set)
	r.Reply = links.Markdown(r.Reply, set)
	for i := range r.Interrupts {
		in := &r.Interrupts[i]
		in.Draft = links.Markdown(in.Draft, set)
		in.Summary = links.Markdown(in.Summary, set)
		in.Question = links.Markdown(in.Question, set)
		if in.Review != nil {
			rv := *in.Review
			rv.Feedback = links.Markdown(rv.Feedback, set)
			in.Review = &rv
		}
		if p := in.Plan; p != nil {
			// The interrupt's own copy (decoded from its payload), shown
			// for approval.
			p.Theme, p.PlanText = links.Markdown(p.Theme, set), links.Markdown(p.PlanText, set)
			for j := range p.InvestigationPoints {
				p.InvestigationPoints[j] = links.Markdown(p.InvestigationPoints[j], set)
			}
			for j := range p.Subtasks {
				p.Subtasks[j].Title = links.Markdown(p.Subtasks[j].Title, set)
				for k := range p.Subtasks[j].Queries {
					p.Subtasks[j].Queries[k] = links.Markdown(p.Subtasks[j].Queries[k], set)
				}
			}
		}
	}
}
