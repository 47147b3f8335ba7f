package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
)

var (
	thinkBlock = []*regexp.Regexp{
		regexp.MustCompile(`(?is)<think>.*?</think>`),
		regexp.MustCompile(`(?is)<thinking>.*?</thinking>`),
		regexp.MustCompile(`(?is)<reasoning>.*?</reasoning>`),
	}
	thinkClose = regexp.MustCompile(`(?i)</(think|thinking|reasoning)>`)
	thinkOpen  = regexp.MustCompile(`(?i)<(think|thinking|reasoning)>`)
)

// StripThink removes reasoning blocks (<think>…</think>, also <thinking> and
// <reasoning>) that local reasoning models put in their content. A closing
// tag without an opening one (the chat template opened it) drops everything
// before it. An opening tag that never closes is removed and unterminated is
// true: the answer, if any, is at the end.
func StripThink(s string) (out string, unterminated bool) {
	for _, re := range thinkBlock {
		s = re.ReplaceAllString(s, "")
	}
	if locs := thinkClose.FindAllStringIndex(s, -1); len(locs) > 0 {
		s = s[locs[len(locs)-1][1]:]
	}
	if thinkOpen.MatchString(s) {
		s = thinkOpen.ReplaceAllString(s, "")
		unterminated = true
	}
	return strings.TrimSpace(s), unterminated
}

// maxCandidates bounds the work on pathological replies.
const maxCandidates = 64

// ExtractJSON finds the JSON value in a model reply: it strips think blocks,
// code fences and prose around the value, and repairs trailing commas and raw
// control characters inside strings. It returns the first candidate that is
// valid JSON (the last one after an unterminated think block).
func ExtractJSON(s string) (string, error) {
	cands, err := jsonCandidates(s)
	if err != nil {
		return "", err
	}
	return cands[0], nil
}

// DecodeJSON extracts JSON from a model reply as ExtractJSON does and
// unmarshals it into out (a non-nil pointer), trying each candidate value in
// turn until one fits out's type. Errors wrap ErrInvalidJSON.
func DecodeJSON(s string, out any) error {
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("llm: DecodeJSON needs a non-nil pointer, got %T", out)
	}
	cands, err := jsonCandidates(s)
	if err != nil {
		return err
	}
	var first error
	for _, c := range cands {
		v := reflect.New(rv.Elem().Type())
		err := json.Unmarshal([]byte(c), v.Interface())
		if err == nil {
			rv.Elem().Set(v.Elem())
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return fmt.Errorf("%w: %v", ErrInvalidJSON, first)
}

func jsonCandidates(s string) ([]string, error) {
	s, preferLast := StripThink(s)
	if s == "" {
		return nil, fmt.Errorf("%w: the reply is empty", ErrInvalidJSON)
	}
	if json.Valid([]byte(s)) && (s[0] == '{' || s[0] == '[') {
		return []string{s}, nil
	}
	cands, unclosed, cut := scanCandidates(s)
	if cut && len(cands) == 0 {
		return nil, fmt.Errorf("%w: the JSON is incomplete (%w before it closed)", ErrInvalidJSON, ErrCutOff)
	}
	if len(cands) == 0 {
		if unclosed {
			return nil, fmt.Errorf("%w: the JSON is incomplete (unbalanced brackets; was the reply cut off?)", ErrInvalidJSON)
		}
		return nil, fmt.Errorf("%w: no JSON object found in the reply", ErrInvalidJSON)
	}
	if preferLast {
		slices.Reverse(cands)
	}
	return cands, nil
}

// scanCandidates finds the JSON values in s, valid or repaired, at most
// maxCandidates. unclosed reports a value left unbalanced; cut that one
// started like JSON and ran to the end of the reply: it was cut off, and
// whatever complete value lies inside it is a fragment (the first subtask
// of a plan), never the answer. Values before it stand.
func scanCandidates(s string) (cands []string, unclosed, cut bool) {
	for i := 0; i < len(s) && len(cands) < maxCandidates; i++ {
		if s[i] != '{' && s[i] != '[' {
			continue
		}
		end, ok := scanValue(s, i)
		if !ok {
			unclosed = true
			if end < 0 && opensJSON(s, i) {
				return cands, true, true
			}
			continue
		}
		if v, ok := validOrRepaired(s[i:end]); ok {
			cands = append(cands, v)
			i = end - 1
		}
	}
	return cands, unclosed, false
}

// validOrRepaired is raw when it is valid JSON, else its repair when that
// is.
func validOrRepaired(raw string) (string, bool) {
	if json.Valid([]byte(raw)) {
		return raw, true
	}
	if fixed := repairJSON(raw); json.Valid([]byte(fixed)) {
		return fixed, true
	}
	return "", false
}

// stringScan follows a byte-by-byte scan of JSON text in and out of strings.
type stringScan struct{ in, esc bool }

// next takes the next byte and reports whether it lies inside a string (the
// closing quote does, the opening one not) and, if so, whether a backslash
// escapes it.
func (sc *stringScan) next(c byte) (inString, escaped bool) {
	if !sc.in {
		sc.in = c == '"'
		return false, false
	}
	switch {
	case sc.esc:
		sc.esc = false
		return true, true
	case c == '\\':
		sc.esc = true
	case c == '"':
		sc.in = false
	}
	return true, false
}

// opensJSON reports whether the bracket at s[i] starts what looks like a
// JSON value rather than prose ("A { stray brace"): an object's first key
// or its end, an array's first value or its end.
func opensJSON(s string, i int) bool {
	j := i + 1
	for j < len(s) && strings.IndexByte(" \t\r\n", s[j]) >= 0 {
		j++
	}
	if j == len(s) {
		return true
	}
	if s[i] == '{' {
		return s[j] == '"' || s[j] == '}'
	}
	if strings.IndexByte(`{["-0123456789]`, s[j]) >= 0 {
		return true
	}
	for _, lit := range []string{"true", "false", "null"} {
		if strings.HasPrefix(s[j:], lit) || strings.HasPrefix(lit, s[j:]) {
			return true
		}
	}
	return false
}

// scanValue returns the end (exclusive) of the bracketed value starting at
// s[start], honouring strings and escapes, or false if it never closes or
// the brackets do not match; the end is -1 when the text ran out before the
// value closed (a cut-off reply), 0 when the brackets do not match.
func scanValue(s string, start int) (int, bool) {
	stack := make([]byte, 0, 16)
	var sc stringScan
	for i := start; i < len(s); i++ {
		c := s[i]
		if in, _ := sc.next(c); in {
			continue
		}
		switch c {
		case '{':
			stack = append(stack, '}')
		case '[':
			stack = append(stack, ']')
		case '}', ']':
			if len(stack) == 0 || stack[len(stack)-1] != c {
				return 0, false
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return i + 1, true
			}
		}
	}
	return -1, false
}

// repairJSON drops trailing commas before } or ] and escapes raw newlines,
// carriage returns and tabs inside strings.
func repairJSON(s string) string {
	var b bytes.Buffer
	b.Grow(len(s))
	var sc stringScan
	for i := 0; i < len(s); i++ {
		c := s[i]
		if in, escaped := sc.next(c); in {
			switch {
			case escaped:
			case c == '\n':
				b.WriteString(`\n`)
				continue
			case c == '\r':
				b.WriteString(`\r`)
				continue
			case c == '\t':
				b.WriteString(`\t`)
				continue
			}
			b.WriteByte(c)
			continue
		}
		if c == ',' {
			j := i + 1
			for j < len(s) && strings.IndexByte(" \t\r\n", s[j]) >= 0 {
				j++
			}
			if j < len(s) && (s[j] == '}' || s[j] == ']') {
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}
