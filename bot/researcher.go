package bot

import "deepresearch/research"

// Researcher is what the bot needs from the research agent: the run
// service's (research.Researcher).
type Researcher = research.Researcher

// RunEnder is a Researcher told when a run on a thread has ended
// (research.RunEnder).
type RunEnder = research.RunEnder
