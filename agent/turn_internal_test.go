package agent

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"deepresearch/graph"
	"deepresearch/graph/memsaver"
)

// carried are the fields of State a new turn keeps: the thread's knowledge
// (history, findings, sources, usage, ...) and the last turn's plan, draft
// and report, which a follow-up revises. Every other field belongs to the
// turn.
var carried = map[string]bool{
	"Turn": true, "History": true, "Plan": true, "Results": true, "Findings": true, "Sources": true,
	"Queries": true, "Notes": true, "Unreachable": true, "Routes": true, "Usage": true,
	"Draft": true, "DraftCitations": true, "DraftExtractive": true,
	"Report": true, "Summary": true, "Citations": true,
}

// TestNewTurnStartsFromZero fills every field of State in one turn, starts
// the next with Start's input, and checks what the next turn's first node
// sees: the carried fields survive, the turn's input is the new request, and
// every other field is zero. A new field fails it until its channel is
// marked graph.PerTurn in newSchema, or listed in carried.
func TestNewTurnStartsFromZero(t *testing.T) {
	ctx := context.Background()
	sc := newSchema()
	var seen []State
	b := graph.New(sc.s)
	b.AddNode("probe", func(_ context.Context, s State) ([]graph.Write, error) {
		seen = append(seen, s)
		return nil, nil
	})
	b.AddEdge(graph.Start, "probe").AddEdge("probe", graph.End)
	g, err := b.Compile(graph.Options{Saver: memsaver.New(memsaver.Options{})})
	if err != nil {
		t.Fatal(err)
	}

	var full State
	fields := reflect.ValueOf(&full).Elem()
	var first []graph.Write
	for i := range fields.NumField() {
		f, v := fields.Type().Field(i), fields.Field(i)
		fill(v, 0)
		if v.IsZero() {
			t.Fatalf("the test cannot fill State.%s (%s): teach fill its type", f.Name, f.Type)
		}
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		first = append(first, graph.Write{Channel: key, Value: v.Interface()})
	}
	if _, err := g.Invoke(ctx, graph.Config{ThreadID: "t", Input: first}); err != nil {
		t.Fatalf("turn 1: %v", err)
	}

	prev := seen[0]
	req := Request{Question: "next question"}
	deadline := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := g.Invoke(ctx, graph.Config{ThreadID: "t", Input: sc.turnInput(prev, req, "en", deadline, "tp")}); err != nil {
		t.Fatalf("turn 2: %v", err)
	}
	next := reflect.ValueOf(seen[1])
	input := map[string]any{
		"Turn": prev.Turn + 1, "Req": req, "Question": req.Question, "Language": "en",
		"Deadline": deadline, "TurnStart": prev.Usage.Total(), "TraceParent": "tp",
	}
	for i := range next.NumField() {
		name, v := next.Type().Field(i).Name, next.Field(i)
		switch want, ok := input[name]; {
		case ok:
			if !reflect.DeepEqual(v.Interface(), want) {
				t.Errorf("turn 2 starts with %s = %+v, want the turn's input %+v", name, v.Interface(), want)
			}
		case carried[name]:
			if v.IsZero() {
				t.Errorf("turn 2 lost %s, which a new turn keeps", name)
			}
		case !v.IsZero():
			t.Errorf("turn 1's %s survives into turn 2 (%+v): mark its channel graph.PerTurn in newSchema, or list it in carried", name, v.Interface())
		}
	}
}

// fill sets v, and the exported fields it holds, to values that are not zero.
func fill(v reflect.Value, depth int) {
	if depth > 3 || !v.CanSet() {
		return
	}
	switch v.Interface().(type) {
	case time.Time:
		v.Set(reflect.ValueOf(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)))
		return
	case json.RawMessage:
		v.Set(reflect.ValueOf(json.RawMessage(`{"x":1}`)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(2)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(2)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.5)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), depth+1)
		}
	}
}
