package bot

import (
	"context"

	"deepresearch/research"
)

// Researcher is what the bot needs from the research agent. Every method
// works on a graph thread id (see ThreadID) and blocks until the run
// finishes, pauses on an interrupt, or ctx ends; progress is reported through
// sink while it runs. An Outcome carries either an Interrupt (the run is
// paused and waits for an Answer) or a Result (the run is finished).
//
// When ctx ends the methods return an error wrapping ctx's error; the thread
// must then be resumable with Continue (the graph's last checkpoint).
// Two calls never run at once for one thread: the bot's run lease guarantees
// it across processes.
type Researcher interface {
	// Start asks a new question on a thread: the first one, or a follow-up
	// ("dig deeper into X", "rewrite shorter") on a thread that already has
	// history, which the agent should use.
	Start(ctx context.Context, req research.StartRequest, sink research.ProgressSink) (research.Outcome, error)
	// Resume answers the pending interrupt with id interruptID. A second
	// answer to the same interrupt must fail (the bot only sends one).
	Resume(ctx context.Context, threadID, interruptID string, ans research.Answer, sink research.ProgressSink) (research.Outcome, error)
	// Continue carries on a run that stopped without finishing (the process
	// died, its lease was lost, or it was shut down) from the last
	// checkpoint. It returns ErrNothingToContinue when the thread has no
	// unfinished work, i.e. the input that started the run never reached a
	// checkpoint; the bot then repeats Start or Resume.
	Continue(ctx context.Context, threadID string, sink research.ProgressSink) (research.Outcome, error)
	// Cancel discards the unfinished work of a thread (a cancelled run), so
	// that a later Start on the thread begins afresh. It is called after
	// the running call has returned. Cancelling a thread with nothing
	// pending is not an error.
	Cancel(ctx context.Context, threadID string) error
}

// RunEnder is a Researcher told when a run on a thread has ended (done,
// failed or cancelled), to drop what must not outlive the run: what it read
// from the requester's workspace (research.Runner implements it).
type RunEnder interface {
	EndRun(ctx context.Context, threadID string) error
}
