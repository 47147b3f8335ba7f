package llm

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// Structured asks for a JSON object conforming to the JSON schema derived
// from T (see GenerateSchema) and decodes it into out. T must be a struct
// (or pointer to one).
//
// It uses response_format json_schema (strict when T allows it). When the
// server rejects that (HTTP 400 mentioning response_format or json_schema)
// the client steps down to json_object with the schema in the system
// prompt, then to the prompt alone, and remembers the step for later calls.
//
// The reply is parsed tolerantly (see DecodeJSON). If it still does not
// parse, the broken output and the parse error are sent back once asking for
// valid JSON only; a second failure returns an error wrapping
// ErrInvalidJSON. A reply that was cut off (finish_reason length, or JSON
// that never closes) is never decoded: the request is made again, up to
// Options.MaxRetries times, and then the error wraps ErrCutOff too. The returned Response is the last one, with Usage, Cost
// and Attempts summed over every call made.
func Structured[T any](ctx context.Context, c *Client, req Request, out *T) (Response, error) {
	t := typeOf[T]()
	s, strict, err := schemaForType(t, !c.opts.NonStrict)
	if err != nil {
		return Response{}, err
	}
	if req.SchemaName == "" {
		req.SchemaName = typeSchemaName(t)
	}
	return c.structured(ctx, req, s, strict, out)
}

// ChatJSON is the non-generic form of Structured for a hand-made schema;
// out is any pointer encoding/json can decode into. The schema is sent
// strict unless Options.NonStrict is set.
func (c *Client) ChatJSON(ctx context.Context, req Request, schema *Schema, out any) (Response, error) {
	if schema == nil {
		return Response{}, fmt.Errorf("%w: nil schema", ErrSchema)
	}
	if req.SchemaName == "" {
		req.SchemaName = "response"
	}
	return c.structured(ctx, req, schema, !c.opts.NonStrict, out)
}

func typeSchemaName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

func cleanSchemaName(s string) string {
	s = strings.Trim(nonSchemaName.ReplaceAllString(s, "_"), "_")
	if s == "" {
		s = "response"
	}
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

func (c *Client) structured(ctx context.Context, req Request, schema *Schema, strict bool, out any) (Response, error) {
	if !slices.Contains(schema.Type, "object") {
		return Response{}, fmt.Errorf("%w: structured output must be a JSON object at the top level; wrap the value in a struct", ErrSchema)
	}
	if len(req.Tools) > 0 {
		return Response{}, fmt.Errorf("%w: Structured does not take tools; use Chat", ErrConfig)
	}
	name := cleanSchemaName(req.SchemaName)
	schemaText, err := schema.MarshalJSON()
	if err != nil {
		return Response{}, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	model, env := c.resolveModel(req)
	msgs := req.Messages
	reasks := 0
	var sum Response
	var local int32 // a per-call step down (schema rejected as invalid)
	for {
		level := max(c.jsonMode.Load(), local)
		mode := jsonModes[level]
		r := req
		r.Messages = msgs
		oreq := c.buildRequest(model, r)
		askJSON(&oreq, mode, name, schema, string(schemaText), strict)
		resp, err := c.do(ctx, r, model, env, oreq)
		if err != nil {
			// what the failed call sent is paid for too
			sum.Requests += resp.Requests
			sum.Wasted.add(resp.Wasted)
			if c.fallBack(ctx, err, level, &local, model, name) {
				continue
			}
			return sum, err
		}
		sum = accumulate(sum, resp)

		if resp.Refusal != "" {
			return sum, &Error{Kind: ErrRefused, Model: model, Message: truncate(resp.Refusal, 500)}
		}
		cut := resp.FinishReason == string(openai.FinishReasonLength)
		var perr error
		if cut {
			// a reply cut at max tokens is a fragment even when some
			// prefix of it parses: never decode it as the whole
			perr = fmt.Errorf("%w: %w at the length limit (finish_reason length)", ErrInvalidJSON, ErrCutOff)
		} else if perr = DecodeJSON(resp.Content, out); perr == nil {
			return sum, nil
		}
		cut = cut || errors.Is(perr, ErrCutOff)
		// A cut-off reply is asked for again from the start, within the
		// retry budget; a reply that does not parse is sent back once for
		// a repair.
		limit := 1
		if cut {
			limit = max(c.opts.MaxRetries, 1)
		}
		if reasks >= limit {
			return sum, fmt.Errorf("llm: structured output %s from %s invalid after %d more request(s): %w", name, model, reasks, perr)
		}
		reasks++
		if cut {
			c.log.WarnContext(ctx, "llm: structured reply was cut off; asking again",
				"model", model, "node", NodeFrom(ctx), "schema", name, "finish", resp.FinishReason, "error", perr)
			msgs = append(slices.Clone(req.Messages), User(cutOffPrompt(resp.FinishReason)))
			continue
		}
		c.log.WarnContext(ctx, "llm: structured reply did not parse; asking once for a repair",
			"model", model, "node", NodeFrom(ctx), "schema", name, "error", perr)
		msgs = append(slices.Clone(msgs),
			Assistant(truncate(resp.Content, 16000)),
			User(repairPrompt(perr, string(schemaText))))
	}
}

// askJSON sets how oreq asks for JSON in mode: a JSON schema response
// format, a JSON object response format with the schema in the system
// message, or the schema in the system message only.
func askJSON(oreq *openai.ChatCompletionRequest, mode JSONMode, name string, schema *Schema, schemaText string, strict bool) {
	switch mode {
	case JSONModeSchema:
		oreq.ResponseFormat = &openai.ChatCompletionResponseFormat{
			Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{
				Name: name, Schema: schema, Strict: strict,
			},
		}
	case JSONModeObject:
		oreq.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}
		oreq.Messages = withSchemaInstruction(oreq.Messages, schemaText)
	default:
		oreq.Messages = withSchemaInstruction(oreq.Messages, schemaText)
	}
}

// fallBack steps the JSON mode down after a call at level failed with
// err, when the server rejected the response format and a weaker mode is
// left: for this call only (local) when it rejected this schema, for the
// client otherwise. It reports whether to try again.
func (c *Client) fallBack(ctx context.Context, err error, level int32, local *int32, model, name string) bool {
	if int(level) >= len(jsonModes)-1 || !rejectsResponseFormat(err) {
		return false
	}
	if invalidSchema(err) {
		// The server supports the mode but not this schema: step
		// down for this call only, and say so.
		c.log.WarnContext(ctx, "llm: server rejected the JSON schema; falling back for this call",
			"model", model, "schema", name, "error", err)
		*local = level + 1
		return true
	}
	if c.jsonMode.CompareAndSwap(level, level+1) {
		c.log.InfoContext(ctx, "llm: server rejected response_format; falling back",
			"model", model, "from", string(jsonModes[level]), "to", string(jsonModes[level+1]))
	}
	return true
}

// accumulate is resp with the usage, waste, cost, attempts and requests
// of the calls before it (sum) added.
func accumulate(sum, resp Response) Response {
	usage, wasted := sum.Usage, sum.Wasted
	usage.add(resp.Usage)
	wasted.add(resp.Wasted)
	cost, attempts, requests := sum.Cost+resp.Cost, sum.Attempts+resp.Attempts, sum.Requests+resp.Requests
	resp.Usage, resp.Wasted, resp.Cost, resp.Attempts, resp.Requests = usage, wasted, cost, attempts, requests
	return resp
}

// cutOffPrompt asks again for a reply whose JSON was cut off, without the
// fragment (which a model would only continue or repeat).
func cutOffPrompt(finish string) string {
	why := "was cut off before its JSON was complete"
	if finish == string(openai.FinishReasonLength) {
		why = "hit the length limit and was cut off before its JSON was complete"
	}
	return "Your previous reply " + why + ". Reply again with the complete JSON object only: " +
		"keep every string short and leave out anything the schema does not ask for."
}

func repairPrompt(err error, schema string) string {
	return "Your previous reply could not be parsed as JSON: " + strings.TrimPrefix(err.Error(), ErrInvalidJSON.Error()+": ") +
		"\nReply again with only the corrected JSON object that conforms to this JSON schema. " +
		"No explanations, no markdown, no code fences.\n" + schema
}

func withSchemaInstruction(msgs []openai.ChatCompletionMessage, schema string) []openai.ChatCompletionMessage {
	instr := "Respond with a single JSON object only, with no prose and no code fences, conforming to this JSON schema:\n" + schema
	out := slices.Clone(msgs)
	if len(out) > 0 && out[0].Role == openai.ChatMessageRoleSystem && len(out[0].MultiContent) == 0 {
		out[0].Content = strings.TrimRight(out[0].Content, "\n") + "\n\n" + instr
		return out
	}
	return append([]openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: instr}}, out...)
}

// rejectsResponseFormat reports a 400 blaming response_format/json_schema.
func rejectsResponseFormat(err error) bool {
	var e *Error
	if !errors.As(err, &e) || e.Status != 400 && e.Status != 422 {
		return false
	}
	text := strings.ToLower(e.Message + " " + e.Code)
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) && apiErr.Param != nil {
		text += " " + strings.ToLower(*apiErr.Param)
	}
	return strings.Contains(text, "response_format") || strings.Contains(text, "json_schema") ||
		strings.Contains(text, "response format")
}

// invalidSchema reports a rejection of this particular schema (OpenAI:
// "Invalid schema for response_format 'X': ...") rather than of the mode.
func invalidSchema(err error) bool {
	var e *Error
	return errors.As(err, &e) && strings.Contains(strings.ToLower(e.Message), "invalid schema")
}
