package llm

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Schema is a JSON schema (the subset that OpenAI structured outputs and
// function calling accept). It marshals with properties in declaration order,
// which matters to models: fields are generated in the order they are listed.
type Schema struct {
	Ref         string   // "$ref"
	Type        []string // one entry marshals as a string, more as an array
	Description string
	Enum        []any
	Format      string
	Pattern     string
	Minimum     *float64
	Maximum     *float64
	MinItems    *int
	MaxItems    *int
	Items       *Schema
	Properties  []Property
	Required    []string
	// AdditionalProperties is nil (omitted), a bool or a *Schema.
	AdditionalProperties any
	AnyOf                []*Schema
	Defs                 map[string]*Schema // "$defs"
}

// Property is a named member of an object schema.
type Property struct {
	Name   string
	Schema *Schema
}

// Property returns the named property's schema, or nil.
func (s *Schema) Property(name string) *Schema {
	for _, p := range s.Properties {
		if p.Name == name {
			return p.Schema
		}
	}
	return nil
}

// JSONSchemaer lets a type provide its own schema.
type JSONSchemaer interface {
	JSONSchema() *Schema
}

// MarshalJSON writes the schema with a stable key order.
func (s *Schema) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	for _, f := range s.fields() {
		if !f.present {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteString(strconv.Quote(f.key))
		b.WriteByte(':')
		var err error
		if ps, ok := f.value.(properties); ok {
			err = ps.writeTo(&b)
		} else {
			err = encodeNoEscape(&b, f.value)
		}
		if err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// schemaField is one member of a schema's JSON, written when present.
type schemaField struct {
	key     string
	value   any
	present bool
}

// fields are the schema's JSON members in the order they are written.
func (s *Schema) fields() []schemaField {
	var typ any = s.Type
	if len(s.Type) == 1 {
		typ = s.Type[0]
	}
	return []schemaField{
		{"$ref", s.Ref, s.Ref != ""},
		{"type", typ, len(s.Type) > 0},
		{"description", s.Description, s.Description != ""},
		{"enum", s.Enum, s.Enum != nil},
		{"format", s.Format, s.Format != ""},
		{"pattern", s.Pattern, s.Pattern != ""},
		{"minimum", s.Minimum, s.Minimum != nil},
		{"maximum", s.Maximum, s.Maximum != nil},
		{"minItems", s.MinItems, s.MinItems != nil},
		{"maxItems", s.MaxItems, s.MaxItems != nil},
		{"items", s.Items, s.Items != nil},
		{"properties", properties(s.Properties), s.Properties != nil},
		{"required", s.Required, s.Required != nil},
		{"additionalProperties", s.AdditionalProperties, s.AdditionalProperties != nil},
		{"anyOf", s.AnyOf, s.AnyOf != nil},
		{"$defs", s.Defs, len(s.Defs) > 0}, // encoding/json sorts map keys
	}
}

// properties are an object schema's members, written in their order.
type properties []Property

func (ps properties) writeTo(b *bytes.Buffer) error {
	b.WriteByte('{')
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(p.Name))
		b.WriteByte(':')
		if err := encodeNoEscape(b, p.Schema); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

func encodeNoEscape(b *bytes.Buffer, v any) error {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1) // Encode appends '\n'
	return nil
}

// SchemaFor returns the JSON schema of T, strict-mode compatible when T
// allows it (no maps or interfaces). See GenerateSchema.
func SchemaFor[T any]() (*Schema, error) {
	s, _, err := schemaForType(typeOf[T](), true)
	return s, err
}

// GenerateSchema derives a JSON schema from a Go type by reflection.
//
// Structs become objects with their exported fields, named and omitted as
// encoding/json does (json tags, "-", embedded structs flattened). Extra
// constraints come from the `jsonschema` tag, a comma-separated list:
//
//	description=text     (may contain commas)
//	enum=a|b|c           (for slices, applies to the items)
//	format=date-time     pattern=^[a-z]+$
//	minimum=1 maximum=5  minItems=1 maxItems=10
//	required / optional  (override the default below)
//
// A field is optional if it is a pointer, has omitempty/omitzero, or is
// tagged optional. In strict mode (OpenAI structured outputs) every object
// has additionalProperties false and lists every property as required;
// optional fields become nullable instead. In non-strict mode only the
// non-optional fields are required.
//
// Maps become objects with additionalProperties and interfaces (any,
// json.RawMessage) become {}; neither is allowed in strict mode, so for such
// types strictOK is false and the returned schema is the non-strict one.
// time.Time is a date-time string. Recursive types use $ref ("#" for the
// root, "#/$defs/Name" otherwise). Types implementing JSONSchemaer supply
// their own schema.
func GenerateSchema(t reflect.Type, strict bool) (s *Schema, strictOK bool, err error) {
	return schemaForType(t, strict)
}

func typeOf[T any]() reflect.Type { return reflect.TypeOf((*T)(nil)).Elem() }

func schemaForType(t reflect.Type, strict bool) (*Schema, bool, error) {
	g := newGen(t, strict)
	s, err := g.schema(t)
	if err != nil {
		return nil, false, err
	}
	if strict && g.loose {
		g = newGen(t, false)
		if s, err = g.schema(t); err != nil {
			return nil, false, err
		}
		strict = false
	}
	if len(g.defs) > 0 {
		s.Defs = g.defs
	}
	return s, strict, nil
}

type schemaGen struct {
	strict    bool
	root      reflect.Type
	loose     bool // saw a map or interface: not strict-compatible
	active    map[reflect.Type]bool
	recursive map[reflect.Type]bool
	names     map[reflect.Type]string
	defs      map[string]*Schema
}

func newGen(root reflect.Type, strict bool) *schemaGen {
	for root.Kind() == reflect.Pointer {
		root = root.Elem()
	}
	return &schemaGen{
		strict:    strict,
		root:      root,
		active:    map[reflect.Type]bool{},
		recursive: map[reflect.Type]bool{},
		names:     map[reflect.Type]string{},
		defs:      map[string]*Schema{},
	}
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	schemaerType  = reflect.TypeFor[JSONSchemaer]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

func (g *schemaGen) schema(t reflect.Type) (*Schema, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(schemaerType) || reflect.PointerTo(t).Implements(schemaerType) {
		return ownSchema(t)
	}
	switch t {
	case timeType:
		return &Schema{Type: []string{"string"}, Format: "date-time"}, nil
	case rawType:
		g.loose = true
		return &Schema{}, nil
	}
	if s := scalarSchema(t.Kind()); s != nil {
		return s, nil
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return g.listSchema(t)
	case reflect.Map:
		return g.mapSchema(t)
	case reflect.Interface:
		g.loose = true
		return &Schema{}, nil
	case reflect.Struct:
		return g.structSchema(t)
	default:
		return nil, fmt.Errorf("%w: unsupported type %s", ErrSchema, t)
	}
}

// ownSchema is a copy of the schema a JSONSchemaer type gives.
func ownSchema(t reflect.Type) (*Schema, error) {
	v := reflect.New(t)
	var sc JSONSchemaer
	if t.Implements(schemaerType) {
		sc = v.Elem().Interface().(JSONSchemaer)
	} else {
		sc = v.Interface().(JSONSchemaer)
	}
	s := sc.JSONSchema()
	if s == nil {
		return nil, fmt.Errorf("%w: %s.JSONSchema returned nil", ErrSchema, t)
	}
	cp := *s
	return &cp, nil
}

// scalarSchema is the schema of a boolean, number or string kind; nil for
// the others.
func scalarSchema(k reflect.Kind) *Schema {
	switch k {
	case reflect.Bool:
		return &Schema{Type: []string{"boolean"}}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &Schema{Type: []string{"integer"}}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		zero := 0.0
		return &Schema{Type: []string{"integer"}, Minimum: &zero}
	case reflect.Float32, reflect.Float64:
		return &Schema{Type: []string{"number"}}
	case reflect.String:
		return &Schema{Type: []string{"string"}}
	}
	return nil
}

// listSchema is the schema of a slice or array: an array of its elements
// (of exactly its length for an array), or a base64 string for []byte.
func (g *schemaGen) listSchema(t reflect.Type) (*Schema, error) {
	if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
		return &Schema{Type: []string{"string"}, Description: "base64"}, nil
	}
	items, err := g.schema(t.Elem())
	if err != nil {
		return nil, err
	}
	s := &Schema{Type: []string{"array"}, Items: items}
	if t.Kind() == reflect.Array {
		n := t.Len()
		s.MinItems, s.MaxItems = &n, &n
	}
	return s, nil
}

// mapSchema is the schema of a map with keys encoding/json writes as
// strings: an object of its values (not strict).
func (g *schemaGen) mapSchema(t reflect.Type) (*Schema, error) {
	k := t.Key()
	if k.Kind() != reflect.String && !k.Implements(textMarshaler) &&
		(k.Kind() < reflect.Int || k.Kind() > reflect.Uint64) {
		return nil, fmt.Errorf("%w: map key type %s", ErrSchema, k)
	}
	g.loose = true
	v, err := g.schema(t.Elem())
	if err != nil {
		return nil, err
	}
	return &Schema{Type: []string{"object"}, AdditionalProperties: v}, nil
}

var nonIdent = regexp.MustCompile(`[^A-Za-z0-9_]+`)

func (g *schemaGen) ref(t reflect.Type) string {
	if t == g.root {
		return "#"
	}
	name, ok := g.names[t]
	if !ok {
		base := strings.Trim(nonIdent.ReplaceAllString(t.Name(), "_"), "_")
		if base == "" {
			base = "T"
		}
		name = base
		for i := 2; ; i++ {
			if _, taken := g.defs[name]; !taken && !slices.Contains(mapValues(g.names), name) {
				break
			}
			name = fmt.Sprintf("%s%d", base, i)
		}
		g.names[t] = name
	}
	return "#/$defs/" + name
}

func mapValues(m map[reflect.Type]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func (g *schemaGen) structSchema(t reflect.Type) (*Schema, error) {
	if g.active[t] {
		g.recursive[t] = true
		return &Schema{Ref: g.ref(t)}, nil
	}
	g.active[t] = true
	defer delete(g.active, t)

	s := &Schema{Type: []string{"object"}, Properties: []Property{}}
	if g.strict {
		s.AdditionalProperties = false
	}
	required := []string{}
	seen := map[string]bool{}
	if err := g.addFields(t, s, &required, seen, map[reflect.Type]bool{}); err != nil {
		return nil, err
	}
	s.Required = required

	if g.recursive[t] && t != g.root {
		ref := g.ref(t)
		g.defs[strings.TrimPrefix(ref, "#/$defs/")] = s
		return &Schema{Ref: ref}, nil
	}
	return s, nil
}

func (g *schemaGen) addFields(t reflect.Type, s *Schema, required *[]string, seen map[string]bool, visiting map[reflect.Type]bool) error {
	if visiting[t] {
		return nil
	}
	visiting[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if et, ok := embeddedStruct(f, name); ok {
			if err := g.addFields(et, s, required, seen, visiting); err != nil {
				return err
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		if err := g.addField(s, required, name, f, opts); err != nil {
			return fmt.Errorf("field %s.%s: %w", t.Name(), f.Name, err)
		}
	}
	return nil
}

// embeddedStruct is the struct type of an embedded field without a JSON
// name, whose fields encoding/json promotes.
func embeddedStruct(f reflect.StructField, name string) (reflect.Type, bool) {
	if !f.Anonymous || name != "" {
		return nil, false
	}
	et := f.Type
	for et.Kind() == reflect.Pointer {
		et = et.Elem()
	}
	return et, et.Kind() == reflect.Struct
}

// addField adds field f as the property name: optional when a pointer,
// omitempty or omitzero (or as its jsonschema tag says); in strict mode
// every property is required and the optional ones nullable.
func (g *schemaGen) addField(s *Schema, required *[]string, name string, f reflect.StructField, opts string) error {
	ft := f.Type
	fs, err := g.schema(ft)
	if err != nil {
		return err
	}
	optional := ft.Kind() == reflect.Pointer || hasOpt(opts, "omitempty") || hasOpt(opts, "omitzero")
	if err := applyTag(fs, ft, f.Tag.Get("jsonschema"), &optional); err != nil {
		return err
	}
	if g.strict && optional {
		fs = nullable(fs)
	}
	if g.strict || !optional {
		*required = append(*required, name)
	}
	s.Properties = append(s.Properties, Property{Name: name, Schema: fs})
	return nil
}

func hasOpt(opts, want string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

func nullable(s *Schema) *Schema {
	// Objects (and refs) become anyOf [schema, null], as OpenAI's own SDKs
	// emit; scalars and arrays get "null" added to their type.
	if s.Ref != "" || s.AnyOf != nil || len(s.Type) == 0 || slices.Contains(s.Type, "object") {
		if len(s.Type) == 0 && s.Ref == "" && s.AnyOf == nil {
			return s // {} already admits null
		}
		desc := s.Description
		inner := *s
		inner.Description = ""
		return &Schema{Description: desc, AnyOf: []*Schema{&inner, {Type: []string{"null"}}}}
	}
	if slices.Contains(s.Type, "null") {
		return s
	}
	s.Type = append(slices.Clone(s.Type), "null")
	if s.Enum != nil {
		s.Enum = append(slices.Clone(s.Enum), nil)
	}
	return s
}

var tagKeys = []string{"description", "enum", "format", "pattern", "minimum", "maximum", "minItems", "maxItems", "required", "optional"}

// splitTag splits a jsonschema tag on commas that start a known key, so
// descriptions may contain commas.
func splitTag(tag string) []string {
	var parts []string
	for _, p := range strings.Split(tag, ",") {
		key, _, _ := strings.Cut(strings.TrimSpace(p), "=")
		if len(parts) > 0 && !slices.Contains(tagKeys, key) {
			parts[len(parts)-1] += "," + p
			continue
		}
		parts = append(parts, p)
	}
	return parts
}

func applyTag(s *Schema, t reflect.Type, tag string, optional *bool) error {
	if tag == "" {
		return nil
	}
	for _, part := range splitTag(tag) {
		key, val, _ := strings.Cut(strings.TrimSpace(part), "=")
		if err := applyTagKey(s, t, key, val, optional); err != nil {
			return err
		}
	}
	return nil
}

// applyTagKey applies one key=value of a jsonschema tag to s, the schema
// of a field of type t.
func applyTagKey(s *Schema, t reflect.Type, key, val string, optional *bool) error {
	switch key {
	case "":
	case "description":
		s.Description = val
	case "required":
		*optional = false
	case "optional":
		*optional = true
	case "format":
		s.Format = val
	case "pattern":
		s.Pattern = val
	case "minimum", "maximum":
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return fmt.Errorf("%w: jsonschema %s=%q", ErrSchema, key, val)
		}
		if key == "minimum" {
			s.Minimum = &f
		} else {
			s.Maximum = &f
		}
	case "minItems", "maxItems":
		n, err := strconv.Atoi(val)
		if err != nil {
			return fmt.Errorf("%w: jsonschema %s=%q", ErrSchema, key, val)
		}
		if key == "minItems" {
			s.MinItems = &n
		} else {
			s.MaxItems = &n
		}
	case "enum":
		return setEnum(s, t, val)
	default:
		return fmt.Errorf("%w: unknown jsonschema tag key %q", ErrSchema, key)
	}
	return nil
}

// setEnum sets the enum of s (of its items for a list) from val, values
// separated by "|" and parsed as the field's type.
func setEnum(s *Schema, t reflect.Type, val string) error {
	target, et := s, t
	for et.Kind() == reflect.Pointer {
		et = et.Elem()
	}
	if (et.Kind() == reflect.Slice || et.Kind() == reflect.Array) && s.Items != nil {
		target, et = s.Items, et.Elem()
		for et.Kind() == reflect.Pointer {
			et = et.Elem()
		}
	}
	enum, err := parseEnum(val, et)
	if err != nil {
		return err
	}
	target.Enum = enum
	return nil
}

func parseEnum(val string, t reflect.Type) ([]any, error) {
	var out []any
	for _, v := range strings.Split(val, "|") {
		switch t.Kind() {
		case reflect.String:
			out = append(out, v)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%w: enum value %q is not an integer", ErrSchema, v)
			}
			out = append(out, n)
		case reflect.Float32, reflect.Float64:
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("%w: enum value %q is not a number", ErrSchema, v)
			}
			out = append(out, f)
		case reflect.Bool:
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("%w: enum value %q is not a bool", ErrSchema, v)
			}
			out = append(out, b)
		default:
			out = append(out, v)
		}
	}
	return out, nil
}

var nonSchemaName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)
