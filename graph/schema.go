package graph

import (
	"encoding/json"
	"fmt"
	"maps"
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
type Schema[S any] struct {
	channels map[string]*channel[S]
	order    []string
}

type channel[S any] struct {
	name   string
	apply  func(s *S, v any) error
	decode func(raw []byte) (any, error)
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

func register[S, T any](s *Schema[S], name string, apply func(st *S, v T)) Channel[T] {
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
	s.order = append(s.order, name)
	return Channel[T]{name: name}
}

// LastValue declares a channel whose write replaces the field.
func LastValue[S, T any](s *Schema[S], name string, field func(*S) *T) Channel[T] {
	return register(s, name, func(st *S, v T) { *field(st) = v })
}

// Append declares a list channel: a write is a list concatenated onto the
// field. Nodes must treat state slices as read-only.
func Append[S, T any](s *Schema[S], name string, field func(*S) *[]T) Channel[[]T] {
	return register(s, name, func(st *S, v []T) {
		p := field(st)
		*p = append(*p, v...)
	})
}

// MergeByKey declares a map channel: a write's entries are merged into the
// field, replacing values with the same key. The map is copied on write, so
// earlier views of the state never change.
func MergeByKey[S any, K comparable, V any](s *Schema[S], name string, field func(*S) *map[K]V) Channel[map[K]V] {
	return register(s, name, func(st *S, v map[K]V) {
		p := field(st)
		m := make(map[K]V, len(*p)+len(v))
		maps.Copy(m, *p)
		maps.Copy(m, v)
		*p = m
	})
}

// Reduce declares a channel with a custom reducer: field = reduce(field, write).
// The reducer must be deterministic and must not mutate its arguments.
func Reduce[S, T any](s *Schema[S], name string, field func(*S) *T, reduce func(old, update T) T) Channel[T] {
	return register(s, name, func(st *S, v T) {
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
