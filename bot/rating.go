package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/slack-go/slack"

	"deepresearch/research"
	"deepresearch/slackstate"
)

// Ratings: the feedback buttons under a report or a digest (a
// context_actions block with a feedback_buttons element, Slack's convention
// under an AI answer). A click is stored once per user and run, the latest
// winning, and acknowledged quietly; a negative one opens a "what was
// wrong?" form whose text is kept with it. The word "feedback" in this
// package already means the changes someone asks for in a draft, so these
// are ratings here.
const (
	ratingPrefix      = "dr_rate"             // action_id of the buttons; prefix of every rating interaction
	callbackRatingWhy = ratingPrefix + "_why" // the "what was wrong?" form
	blockRatingWhy    = "dr_rate_why_block"
	actionRatingWhy   = "dr_rate_why_text"
	ratingBlockPrefix = "dr_rate:" // block_id: the prefix and the rated run's id
)

// ratingBlock is the feedback buttons for a run's report (or a digest,
// under its firing's id).
func ratingBlock(runID string) slack.Block {
	buttons := slack.NewFeedbackButtonsBlockElement(ratingPrefix,
		slack.NewFeedbackButton(plain("Good"), string(research.FeedbackGood)),
		slack.NewFeedbackButton(plain("Not good"), string(research.FeedbackBad)))
	return slack.NewContextActionsBlock(ratingBlockPrefix+runID, buttons)
}

// ratings are the feedback buttons under reports and digests, the "what
// was wrong?" form, and the tally /research status and the App Home show.
type ratings struct {
	feedback research.FeedbackStore // nil: no ratings
	store    research.Store
	records  slackstate.Store
	slack    *slackClient
	log      *slog.Logger
	metrics  *Metrics
	maxLen   int      // Options.MaxQuestionLen: the longest "what was wrong?" text kept
	digests  *Digests // nil unless Options.Digests is set: digests are rated too
}

// ratingBlocks appends the feedback buttons when ratings are kept.
func (rt *ratings) ratingBlocks(blocks []slack.Block, runID string) []slack.Block {
	if rt.feedback == nil || runID == "" {
		return blocks
	}
	return append(blocks, ratingBlock(runID))
}

// onRating handles a click on the feedback buttons and the submission of
// the "what was wrong?" form. The block action's channel has passed the
// allow-list already.
func (rt *ratings) onRating(ctx context.Context, cb slack.InteractionCallback) error {
	switch cb.Type {
	case slack.InteractionTypeViewSubmission:
		return rt.onWhy(ctx, cb)
	case slack.InteractionTypeBlockActions:
		for _, a := range cb.ActionCallback.BlockActions {
			if a.ActionID != ratingPrefix {
				continue
			}
			if err := rt.onClick(ctx, cb, a); err != nil {
				return err
			}
		}
	}
	return nil
}

// onWhy records the "what was wrong?" form's text as a bad rating.
func (rt *ratings) onWhy(ctx context.Context, cb slack.InteractionCallback) error {
	if cb.View.CallbackID != callbackRatingWhy {
		return nil
	}
	text := ""
	if cb.View.State != nil {
		text = strings.TrimSpace(cb.View.State.Values[blockRatingWhy][actionRatingWhy].Value)
	}
	if text == "" {
		return nil
	}
	text = Truncate(text, rt.maxLen)
	if err := rt.rateable(ctx, cb, cb.View.PrivateMetadata, ""); err != nil {
		return err
	}
	return rt.recordRating(ctx, cb.View.PrivateMetadata, cb.User.ID, research.FeedbackBad, text)
}

// onClick records a click on the feedback buttons; a bad one opens the
// "what was wrong?" form.
func (rt *ratings) onClick(ctx context.Context, cb slack.InteractionCallback, a *slack.BlockAction) error {
	runID, ok := strings.CutPrefix(a.BlockID, ratingBlockPrefix)
	v := research.FeedbackValue(a.Value)
	if !ok || runID == "" || !v.Valid() {
		return fmt.Errorf("bot: rating: block %q value %q", a.BlockID, a.Value)
	}
	if err := rt.rateable(ctx, cb, runID, interactionChannel(cb)); err != nil {
		return err
	}
	if err := rt.recordRating(ctx, runID, cb.User.ID, v, ""); err != nil {
		return err
	}
	if v != research.FeedbackBad || cb.TriggerID == "" {
		return nil
	}
	err := rt.slack.call(ctx, "views.open", false, func(ctx context.Context) error {
		_, err := rt.slack.api.OpenViewContext(ctx, cb.TriggerID, ratingWhyModal(runID))
		return err
	})
	if err != nil {
		rt.log.Warn("bot: rating form", "run_id", runID, "err", err)
	}
	return nil
}

// errRatingRefused: a rating that no click on the bot's buttons can send
// (a forged or misrouted envelope); it is not recorded.
var errRatingRefused = errors.New("bot: rating refused")

// rateable checks, as defence in depth, that a rating of runID comes from
// where the bot's buttons are: an envelope with a team id, a run that
// exists (a digest's firing: a schedule that exists), clicked in the run's
// channel (channel "" for the form, which has none), and in a DM by the
// DM's owner, the run's requester (the only person there besides the bot).
// Slack's own envelopes always pass.
func (rt *ratings) rateable(ctx context.Context, cb slack.InteractionCallback, runID, channel string) error {
	user := cb.User.ID
	if team := cb.Team.ID; team == "" && cb.User.TeamID == "" || user == "" {
		return fmt.Errorf("%w: %s by %q without a team or a user", errRatingRefused, runID, user)
	}
	if rest, ok := strings.CutPrefix(runID, "schedule:"); ok {
		i := strings.LastIndex(rest, ":")
		if rt.digests == nil || i <= 0 {
			return fmt.Errorf("%w: %s: no such digest", errRatingRefused, runID)
		}
		if _, err := rt.digests.mgr.Store.GetSchedule(ctx, rest[:i]); err != nil {
			return fmt.Errorf("%w: %s: schedule: %w", errRatingRefused, runID, err)
		}
		return nil
	}
	r, err := rt.store.Run(ctx, runID)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", errRatingRefused, runID, err)
	}
	p, err := rt.records.Place(ctx, runID)
	if err != nil {
		return fmt.Errorf("%w: %s: its place: %w", errRatingRefused, runID, err)
	}
	switch {
	case channel != "" && channel != p.Key.Channel:
		return fmt.Errorf("%w: %s is in %s, the click came from %s", errRatingRefused, runID, p.Key.Channel, channel)
	case strings.HasPrefix(p.Key.Channel, "D") && user != r.Requester:
		return fmt.Errorf("%w: %s is in %s's DM, rated by %s", errRatingRefused, runID, r.Requester, user)
	}
	return nil
}

func (rt *ratings) recordRating(ctx context.Context, runID, user string, v research.FeedbackValue, text string) error {
	err := rt.feedback.RecordFeedback(ctx, research.Feedback{RunID: runID, User: user, Value: v, Text: text, At: rt.slack.now()})
	if err != nil {
		return fmt.Errorf("bot: record rating of %s: %w", runID, err)
	}
	if text == "" {
		rt.metrics.ratings.WithLabelValues(string(v)).Inc()
	}
	rt.log.Info("bot: rating", "run_id", runID, "user", user, "value", v, "with_text", text != "")
	return nil
}

// ratingWhyModal asks what was wrong with a report.
func ratingWhyModal(runID string) slack.ModalViewRequest {
	input := slack.NewPlainTextInputBlockElement(plain("The sources, a claim, what is missing…"), actionRatingWhy)
	input.Multiline = true
	input.MaxLength = 3000
	return slack.ModalViewRequest{
		Type:            slack.VTModal,
		CallbackID:      callbackRatingWhy,
		PrivateMetadata: runID,
		Title:           plain("What was wrong?"),
		Submit:          plain("Send"),
		Close:           plain("Skip"),
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			slack.NewInputBlock(blockRatingWhy, plain("What was wrong with this report?"), nil, input),
		}},
	}
}

// ratingCounts tallies the ratings of runs for a listing; nil when ratings
// are not kept or cannot be read (the listing goes on without them).
func (rt *ratings) ratingCounts(ctx context.Context, runs []research.Run) map[string]research.FeedbackCount {
	if rt.feedback == nil || len(runs) == 0 {
		return nil
	}
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	counts, err := rt.feedback.CountFeedback(ctx, ids)
	if err != nil {
		rt.log.Warn("bot: count ratings", "err", err)
		return nil
	}
	return counts
}

// ratingText is a run's tally for a listing ("" without ratings).
func ratingText(c research.FeedbackCount) string {
	if c.Good == 0 && c.Bad == 0 {
		return ""
	}
	return fmt.Sprintf(" · 👍 %d 👎 %d", c.Good, c.Bad)
}
