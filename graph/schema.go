package graph

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
)

// Write is one update a node returns: a value for one channel (a field of the
// state). Writes are plain data: they are stored as JSON and replayed through
// the channel's reducer, so a node's effect survives the process.
type Write struct {
	Channel string
	Value   any
}

// Schema declares the channels of a state type S: which field each channel
// updates and how (last value, append, merge by key, or a custom reducer).
// A channel's name is given, or ("") the JSON key of its field, the key the
// field has in snapshots.
type Schema[S any] struct {
	channels map[string]*channel[S]
	// perTurn are the writes that reset the PerTurn channels, in the order
	// they were declared.
	perTurn []Write
}

type channel[S any] struct {
	name   string
	apply  func(s *S, v any) error
	decode func(raw []byte) (any, error)
}

// ChannelOption configures a LastValue channel.
type ChannelOption func(*channelOpts)

type channelOpts struct{ perTurn bool }

// PerTurn makes a new turn (an Invoke with Input) reset the channel to its
// zero value before the input applies, unless the input writes it. The reset
// is stored with the input, as if the input had written the zero value.
func PerTurn() ChannelOption { return func(o *channelOpts) { o.perTurn = true } }

// newTurn returns input preceded by the resets of the PerTurn channels it
// does not write.
func (s *Schema[S]) newTurn(input []Write) []Write {
	if len(s.perTurn) == 0 {
		return input
	}
	written := make(map[string]bool, len(input))
	for _, w := range input {
		written[w.Channel] = true
	}
	out := make([]Write, 0, len(s.perTurn)+len(input))
	for _, w := range s.perTurn {
		if !written[w.Channel] {
			out = append(out, w)
		}
	}
	return append(out, input...)
}

// fieldName returns name, or when it is "" the JSON key of the field of S
// that field points to (its Go name when the field has no JSON name).
func fieldName[S, T any](name string, field func(*S) *T) string {
	if name != "" {
		return name
	}
	var st S
	v := reflect.ValueOf(&st).Elem()
	if v.Kind() != reflect.Struct {
		panic(fmt.Sprintf("graph: a channel of %T needs a name", st))
	}
	addr := reflect.ValueOf(field(&st)).Pointer()
	for _, f := range reflect.VisibleFields(v.Type()) {
		if !f.IsExported() || f.Anonymous || f.Type != reflect.TypeFor[T]() {
			continue
		}
		fv, err := v.FieldByIndexErr(f.Index)
		if err != nil || fv.UnsafeAddr() != addr {
			continue
		}
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch key {
		case "-":
			panic(fmt.Sprintf("graph: field %s of %T is not stored (json:\"-\"); it cannot be a channel", f.Name, st))
		case "":
			return f.Name
		}
		return key
	}
	panic(fmt.Sprintf("graph: a channel of %T without a name must point to an exported field of it", st))
}

// NewSchema returns an empty schema for S.
func NewSchema[S any]() *Schema[S] {
	return &Schema[S]{channels: map[string]*channel[S]{}}
}

// Channel is a typed handle on one declared channel; use it to build writes.
type Channel[T any] struct{ name string }

// Name returns the channel's name.
func (c Channel[T]) Name() string { return c.name }

// Set returns a write of v to the channel (for Append channels v is the list
// of items to add).
func (c Channel[T]) Set(v T) Write { return Write{Channel: c.name, Value: v} }

func register[S, T any](s *Schema[S], name string, apply func(st *S, v T), opts ...ChannelOption) Channel[T] {
	var o channelOpts
	for _, opt := range opts {
		opt(&o)
	}
	if name == "" || name[0] == '_' {
		panic(fmt.Sprintf("graph: channel name %q is empty or reserved", name))
	}
	if _, dup := s.channels[name]; dup {
		panic(fmt.Sprintf("graph: channel %q declared twice", name))
	}
	s.channels[name] = &channel[S]{
		name: name,
		apply: func(st *S, v any) error {
			tv, ok := v.(T)
			if !ok {
				return fmt.Errorf("graph: channel %q wants %T, got %T", name, *new(T), v)
			}
			apply(st, tv)
			return nil
		},
		decode: func(raw []byte) (any, error) {
			var v T
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, fmt.Errorf("graph: decode channel %q: %w", name, err)
			}
			return v, nil
		},
	}
	c := Channel[T]{name: name}
	if o.perTurn {
		var zero T
		s.perTurn = append(s.perTurn, c.Set(zero))
	}
	return c
}

// LastValue declares a channel whose write replaces the field; name ""
// names it after the field (see Schema).
func LastValue[S, T any](s *Schema[S], name string, field func(*S) *T, opts ...ChannelOption) Channel[T] {
	return register(s, fieldName(name, field), func(st *S, v T) { *field(st) = v }, opts...)
}

// Append declares a list channel: a write is a list concatenated onto the
// field. Nodes must treat state slices as read-only. Name "" names it after
// the field.
func Append[S, T any](s *Schema[S], name string, field func(*S) *[]T) Channel[[]T] {
	return register(s, fieldName(name, field), func(st *S, v []T) {
		p := field(st)
		*p = append(*p, v...)
	})
}

// MergeByKey declares a map channel: a write's entries are merged into the
// field, replacing values with the same key. The map is copied on write, so
// earlier views of the state never change. Name "" names it after the field.
func MergeByKey[S any, K comparable, V any](s *Schema[S], name string, field func(*S) *map[K]V) Channel[map[K]V] {
	return register(s, fieldName(name, field), func(st *S, v map[K]V) {
		p := field(st)
		m := make(map[K]V, len(*p)+len(v))
		maps.Copy(m, *p)
		maps.Copy(m, v)
		*p = m
	})
}

// Reduce declares a channel with a custom reducer: field = reduce(field, write).
// The reducer must be deterministic and must not mutate its arguments. Name
// "" names it after the field.
func Reduce[S, T any](s *Schema[S], name string, field func(*S) *T, reduce func(old, update T) T) Channel[T] {
	return register(s, fieldName(name, field), func(st *S, v T) {
		p := field(st)
		*p = reduce(*p, v)
	})
}

func (s *Schema[S]) apply(st *S, w Write) error {
	c, ok := s.channels[w.Channel]
	if !ok {
		return fmt.Errorf("graph: write to undeclared channel %q", w.Channel)
	}
	return c.apply(st, w.Value)
}
