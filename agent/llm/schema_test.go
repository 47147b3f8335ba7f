package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

type Step struct {
	Title  string   `json:"title" jsonschema:"description=What to find out, in one line"`
	Kind   string   `json:"kind" jsonschema:"enum=web|internal|coding"`
	Query  string   `json:"query,omitempty"`
	Weight *float64 `json:"weight" jsonschema:"minimum=0,maximum=1"`
}

type Plan struct {
	Goal     string     `json:"goal" jsonschema:"description=The research question restated"`
	Steps    []Step     `json:"steps" jsonschema:"minItems=1,maxItems=8"`
	Tags     []string   `json:"tags,omitempty" jsonschema:"enum=news|regulation|market"`
	Deadline *time.Time `json:"deadline"`
	Priority int        `json:"priority" jsonschema:"enum=1|2|3"`
	Done     bool       `json:"done"`
	internal string     //nolint:unused // unexported: skipped
	Skip     string     `json:"-"`
	Score    uint8      `json:"score"`
	Extra    *Step      `json:"extra,omitempty"`
	Forced   string     `json:"forced,omitempty" jsonschema:"required"`
	Loose    string     `json:"loose" jsonschema:"optional"`
}

type Meta struct {
	Source string `json:"source"`
}

type WithEmbedded struct {
	Meta
	*Inner
	Name string `json:"name"`
}

type Inner struct {
	Depth int `json:"depth"`
}

type Section struct {
	Heading  string    `json:"heading"`
	Children []Section `json:"children"`
}

type Report struct {
	Title    string    `json:"title"`
	Sections []Section `json:"sections"`
	Related  *Report   `json:"related,omitempty"`
}

type WithMap struct {
	Name   string            `json:"name"`
	Counts map[string]int    `json:"counts"`
	Any    any               `json:"any,omitempty"`
	Raw    json.RawMessage   `json:"raw,omitempty"`
	Nested map[string][]Step `json:"nested"`
}

type Grade string

func (Grade) JSONSchema() *Schema {
	return &Schema{Type: []string{"string"}, Enum: []any{"A", "B", "C"}, Description: "letter grade"}
}

type Custom struct {
	Grade Grade  `json:"grade"`
	Note  *Grade `json:"note,omitempty"`
}

func TestSchemaGolden(t *testing.T) {
	tests := []struct {
		name   string
		typ    reflect.Type
		strict bool
		// wantStrict is whether the type can be strict.
		wantStrict bool
	}{
		{"plan_strict", reflect.TypeFor[Plan](), true, true},
		{"plan_loose", reflect.TypeFor[Plan](), false, false},
		{"embedded_strict", reflect.TypeFor[WithEmbedded](), true, true},
		{"recursive_strict", reflect.TypeFor[Report](), true, true},
		{"map_falls_back", reflect.TypeFor[WithMap](), true, false},
		{"custom_strict", reflect.TypeFor[*Custom](), true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, strict, err := GenerateSchema(tt.typ, tt.strict)
			if err != nil {
				t.Fatal(err)
			}
			if strict != tt.wantStrict {
				t.Errorf("strict = %v, want %v", strict, tt.wantStrict)
			}
			raw, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := json.Indent(&got, raw, "", "  "); err != nil {
				t.Fatalf("schema is not valid JSON: %v\n%s", err, raw)
			}
			got.WriteByte('\n')
			golden := filepath.Join("testdata", tt.name+".golden")
			if *update {
				if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("schema mismatch for %s (go test -update to accept)\ngot:\n%s\nwant:\n%s", tt.name, got.Bytes(), want)
			}
		})
	}
}

// TestSchemaStrictInvariants checks the rules OpenAI's strict mode enforces,
// on every object in the schema.
func TestSchemaStrictInvariants(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[Plan](), reflect.TypeFor[WithEmbedded](), reflect.TypeFor[Report]()} {
		s, strict, err := GenerateSchema(typ, true)
		if err != nil || !strict {
			t.Fatalf("%s: strict=%v err=%v", typ, strict, err)
		}
		var walk func(path string, s *Schema)
		walk = func(path string, s *Schema) {
			if s == nil {
				return
			}
			if len(s.Type) > 0 && s.Type[0] == "object" {
				if s.AdditionalProperties != false {
					t.Errorf("%s %s: additionalProperties = %v, want false", typ, path, s.AdditionalProperties)
				}
				if len(s.Required) != len(s.Properties) {
					t.Errorf("%s %s: required %v does not list all %d properties", typ, path, s.Required, len(s.Properties))
				}
			}
			for _, p := range s.Properties {
				walk(path+"."+p.Name, p.Schema)
			}
			walk(path+"[]", s.Items)
			for i, a := range s.AnyOf {
				walk(path+"|"+string(rune('0'+i)), a)
			}
			for k, d := range s.Defs {
				walk("$defs."+k, d)
			}
		}
		walk("$", s)
	}
}

func TestSchemaErrors(t *testing.T) {
	type badEnum struct {
		N int `json:"n" jsonschema:"enum=one|two"`
	}
	type badKey struct {
		X string `json:"x" jsonschema:"colour=red"`
	}
	type badType struct {
		C chan int `json:"c"`
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[badEnum](), reflect.TypeFor[badKey](), reflect.TypeFor[badType]()} {
		if _, _, err := GenerateSchema(typ, true); !errors.Is(err, ErrSchema) {
			t.Errorf("%s: err = %v, want ErrSchema", typ, err)
		}
	}
}

func TestSchemaTagCommaInDescription(t *testing.T) {
	type T struct {
		A string `json:"a" jsonschema:"description=first, second, third,enum=x|y"`
	}
	s, err := SchemaFor[T]()
	if err != nil {
		t.Fatal(err)
	}
	a := s.Property("a")
	if a.Description != "first, second, third" || len(a.Enum) != 2 {
		t.Errorf("got description %q enum %v", a.Description, a.Enum)
	}
}
