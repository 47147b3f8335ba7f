package llm

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// checkTimeout bounds each request of Check and PickModel: a server that
// does not answer within it is reported at once rather than after the
// per-attempt timeout meant for long generations.
const checkTimeout = 20 * time.Second

// maxListed is how many served models an error message names.
const maxListed = 20

// Check verifies before any research that the endpoint answers, accepts
// the key and serves every model the client uses (the default model and
// the per-role ones). It lists the models (GET /models, free), and asks
// for a model the list lacks by name (GET /models/{id}); it makes no chat
// call. Each request is tried once. The error is an *Error wrapping
// ErrConnection, ErrTimeout, ErrUnauthorized, ErrForbidden,
// ErrModelNotFound or ErrServer, whose one-line message names the variable
// to fix (OPENAI_BASE_URL, OPENAI_API_KEY, DEEPRESEARCH_MODEL or a role's
// DEEPRESEARCH_MODEL_*). Servers that do not list models (Azure
// deployments) are checked for reachability and the key only; a key that
// may not list them (403) is checked with one chat call of one token per
// model.
func (c *Client) Check(ctx context.Context) error {
	served, err := c.servedModels(ctx)
	if errors.Is(err, ErrForbidden) {
		// A key restricted to chat (OpenAI project keys without the
		// model-read scope) may not list models: one tiny chat call per
		// model tells whether it works.
		for _, m := range c.modelsInUse() {
			if err := c.probe(ctx, m); err != nil {
				return err
			}
		}
		return nil
	}
	if err != nil {
		return err
	}
	if served == nil || c.provider == ProviderAzure {
		return nil
	}
	for _, m := range c.modelsInUse() {
		if listed(served, m.model) {
			continue
		}
		ok, err := c.retrievable(ctx, m.model)
		if err != nil {
			return err
		}
		if !ok {
			return &Error{Kind: ErrModelNotFound, Status: 404, Code: "model_not_found", Model: m.model,
				Message: fmt.Sprintf("%s does not serve it", c.base),
				Hint:    fmt.Sprintf("set %s to a model it serves: %s", m.env, nameList(served))}
		}
	}
	return nil
}

// PickModel fills in o.Model when it is empty (DEEPRESEARCH_MODEL unset on
// a server other than OpenAI): if the server lists exactly one model, that
// one, with picked true so the caller can say so; otherwise an error
// wrapping ErrConfig that names DEEPRESEARCH_MODEL and lists the served
// models. A failure to list is an *Error as from Check. With o.Model set
// it returns o unchanged.
func PickModel(ctx context.Context, o Options) (_ Options, picked bool, _ error) {
	if o.Model != "" {
		return o, false, nil
	}
	probe := o
	probe.Model = "-" // New needs one; the listing does not use it
	c, err := New(probe)
	if err != nil {
		return o, false, err
	}
	served, err := c.servedModels(ctx)
	switch {
	case err != nil:
		return o, false, err
	case served == nil:
		return o, false, fmt.Errorf("%w: %s is not set and %s does not list its models: set it to a model the server serves", ErrConfig, EnvModel, c.base)
	case len(served) == 0:
		return o, false, fmt.Errorf("%w: %s is not set and %s lists no models: load one on the server, or set %s", ErrConfig, EnvModel, c.base, EnvModel)
	case len(served) > 1:
		return o, false, fmt.Errorf("%w: %s is not set and %s serves %d models: set it to one of %s", ErrConfig, EnvModel, c.base, len(served), nameList(served))
	}
	o.Model = served[0]
	return o, true, nil
}

// HasPrices reports whether Options.Prices prices every model the client
// uses, so that a cost of the calls is known.
func (c *Client) HasPrices() bool {
	for _, m := range c.modelsInUse() {
		if _, ok := priceFor(c.opts.Prices, m.model); !ok {
			return false
		}
	}
	return true
}

// BaseURL returns the endpoint the client talks to.
func (c *Client) BaseURL() string { return c.base }

type modelUse struct{ model, env string }

// modelsInUse lists the distinct models of the default and the roles,
// each with the variable that sets it.
func (c *Client) modelsInUse() []modelUse {
	out := []modelUse{{c.opts.Model, EnvModel}}
	for _, r := range Roles {
		if m, env := c.opts.modelFor(r); !slices.ContainsFunc(out, func(u modelUse) bool { return u.model == m }) {
			out = append(out, modelUse{m, env})
		}
	}
	return out
}

// servedModels lists the model ids; nil (and no error) when the server has
// no listing (404).
func (c *Client) servedModels(ctx context.Context) ([]string, error) {
	actx, cancel := context.WithTimeout(ctx, c.checkTimeout())
	defer cancel()
	list, err := c.api.ListModels(actx)
	if err != nil {
		f := c.classify(actx, err, list.Header(), "", "")
		if f.kind == ErrModelNotFound {
			return nil, nil
		}
		return nil, c.checkError(ctx, f)
	}
	ids := make([]string, 0, len(list.Models))
	for _, m := range list.Models {
		if m.ID != "" {
			ids = append(ids, m.ID)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// retrievable asks for one model by id: false when the server answers
// 404, true when it answers with the model or cannot say (no such route).
func (c *Client) retrievable(ctx context.Context, model string) (bool, error) {
	actx, cancel := context.WithTimeout(ctx, c.checkTimeout())
	defer cancel()
	m, err := c.api.GetModel(actx, model)
	if err == nil {
		return true, nil
	}
	f := c.classify(actx, err, m.Header(), model, "")
	switch f.kind {
	case ErrModelNotFound:
		return false, nil
	case ErrBadRequest:
		return true, nil // 405 and the like: the server has no such route
	}
	return false, c.checkError(ctx, f)
}

// probe makes one chat call of one completion token with m's model: an
// error only when the key is refused, the model is not served or the
// server cannot be reached.
func (c *Client) probe(ctx context.Context, m modelUse) error {
	actx, cancel := context.WithTimeout(ctx, c.checkTimeout())
	defer cancel()
	resp, err := c.api.CreateChatCompletion(actx, c.buildRequest(m.model, Request{Messages: []Message{User("Reply with OK.")}, MaxTokens: 1}))
	if err == nil {
		return nil
	}
	f := c.classify(actx, err, resp.Header(), m.model, m.env)
	switch f.kind {
	case ErrUnauthorized, ErrForbidden, ErrModelNotFound, ErrConnection, ErrTimeout:
		return c.checkError(ctx, f)
	}
	return nil // the server answered: whatever it disliked, a real request may not
}

// checkError turns a failed check request into an *Error whose message
// says which endpoint failed and how.
func (c *Client) checkError(ctx context.Context, f failure) error {
	if ctx.Err() != nil {
		return fmt.Errorf("llm: checking %s: %w", c.base, context.Cause(ctx))
	}
	switch f.kind {
	case ErrConnection, ErrTimeout:
		cause := f.err
		var ue *url.Error
		if errors.As(cause, &ue) {
			cause = ue.Err
		}
		if errors.Is(cause, context.DeadlineExceeded) {
			f.kind = ErrTimeout
			f.msg = fmt.Sprintf("%s did not answer within %s", c.base, c.checkTimeout())
		} else {
			f.msg = fmt.Sprintf("%s does not answer (%v)", c.base, cause)
		}
		f.hint = fmt.Sprintf("check %s and that the server is running", EnvBaseURL)
	case ErrServer:
		f.hint = fmt.Sprintf("the server at %s is failing; try again later or check %s", c.base, EnvBaseURL)
	}
	return f.toError(1)
}

// checkTimeout bounds one request of a check.
func (c *Client) checkTimeout() time.Duration { return min(c.plainTimeout(), checkTimeout) }

// listed reports whether the server lists model, taking Ollama's implicit
// ":latest" tag into account.
func listed(served []string, model string) bool {
	return slices.Contains(served, model) || !strings.Contains(model, ":") && slices.Contains(served, model+":latest")
}

func nameList(ids []string) string {
	if len(ids) == 0 {
		return "(none)"
	}
	if len(ids) > maxListed {
		return strings.Join(ids[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(ids)-maxListed)
	}
	return strings.Join(ids, ", ")
}
