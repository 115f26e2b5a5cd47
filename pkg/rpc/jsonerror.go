package rpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/steward-run/steward/pkg/terminal"
)

// protojson reports where a message went wrong as "(line L:C)" and names
// only the last field, by its JSON name. explainJSON turns that into the
// field's whole proto path and a sentence about its value, so that
// contract.budget.maxToken is named as such, not as "maxToken".

// protojson puts a space or, at random, a no-break space after "proto:",
// to discourage exactly this; the position format itself is stable.
var protojsonError = regexp.MustCompile(`^proto:[ \x{00a0}]+(syntax error )?\(line (\d+):(\d+)\): (.*)$`)

// explainJSON returns the field path and description for err, which
// protojson returned decoding data into a message of md.
func explainJSON(md protoreflect.MessageDescriptor, data []byte, err error) (field, description string) {
	match := protojsonError.FindStringSubmatch(err.Error())
	if match == nil {
		msg := trimProtoPrefix(err.Error())
		if msg == "unexpected EOF" {
			return "", "is not valid JSON: it ends early"
		}
		return "", "is not valid: " + terminal.EscapeLine(msg)
	}
	syntax, what := match[1] != "", match[4]
	line, _ := strconv.Atoi(match[2])
	col, _ := strconv.Atoi(match[3])
	off := offsetOf(data, line, col)
	segs, isKey := jsonPathAt(data, off)
	loc := locate(md, segs)
	value := echo(tokenAt(data, off))
	switch {
	case syntax && !json.Valid(data):
		return loc.path, fmt.Sprintf("is not valid JSON at line %d, column %d: %s", line, col, terminal.EscapeLine(what))
	case syntax && loc.path == "":
		return "", fmt.Sprintf("must be a JSON object, not %s", jsonKind(value))
	case syntax:
		// Valid JSON that protojson cannot take: the wrong JSON type.
		return loc.path, fmt.Sprintf("does not take %s", jsonKind(value))
	case isKey && strings.HasPrefix(what, "unknown field "):
		return loc.path, unknownField(loc)
	case strings.HasPrefix(what, "duplicate field "):
		return loc.path, "appears twice"
	case strings.HasPrefix(what, "invalid value for enum field ") && loc.field != nil && loc.field.Enum() != nil:
		return loc.path, fmt.Sprintf("%s is not a %s%s", value, loc.field.Enum().FullName(), useOneOf(loc.field.Enum()))
	case strings.HasPrefix(what, "invalid value for "):
		kind, _, _ := strings.Cut(strings.TrimPrefix(what, "invalid value for "), " field ")
		return loc.path, fmt.Sprintf("%s is not a valid %s", value, kind)
	}
	return loc.path, terminal.EscapeLine(what)
}

// tokenAt returns the JSON token that starts at off, or its first bytes.
func tokenAt(data []byte, off int) string {
	if off >= len(data) {
		return ""
	}
	rest := data[off:min(len(data), off+4*maxEcho)]
	if rest[0] == '"' {
		for i := 1; i < len(rest); i++ {
			switch rest[i] {
			case '\\':
				i++
			case '"':
				return string(rest[:i+1])
			}
		}
		return string(rest)
	}
	if i := bytes.IndexAny(rest, ",:}] \t\r\n"); i >= 0 {
		rest = rest[:i]
	}
	return string(rest)
}

// jsonKind names the JSON type of a token, for "does not take a JSON
// object".
func jsonKind(token string) string {
	switch {
	case token == "":
		return "nothing"
	case token[0] == '{':
		return "a JSON object"
	case token[0] == '[':
		return "a JSON array"
	case token[0] == '"':
		return "a JSON string"
	case token == "null":
		return "null"
	case token == "true" || token == "false":
		return "a JSON boolean"
	}
	return "a JSON number"
}

func trimProtoPrefix(s string) string {
	return strings.TrimLeft(strings.TrimPrefix(s, "proto:"), " \u00a0")
}

// offsetOf turns protojson's 1-based line and column (counted in runes)
// into a byte offset in data.
func offsetOf(data []byte, line, col int) int {
	off := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return len(data)
		}
		off += i + 1
	}
	for c := 1; c < col && off < len(data); c++ {
		_, size := utf8.DecodeRune(data[off:])
		off += size
	}
	return off
}

// segment is one step of a JSON path: an object key, or an array index
// when isKey is false.
type segment struct {
	key   string
	index int
	isKey bool
}

// container is an object or array open at some point of a JSON text.
type container struct {
	object    bool
	expectKey bool    // an object waiting for its next key
	at        segment // the current key or index; unset before the first
	started   bool
}

// jsonPathAt returns the path to the token that starts at or covers
// offset, and whether that token is an object key.
func jsonPathAt(data []byte, offset int) (path []segment, isKey bool) {
	var stack []*container
	current := func() []segment {
		out := make([]segment, 0, len(stack))
		for _, c := range stack {
			if c.started {
				out = append(out, c.at)
			}
		}
		return out
	}
	// closed ends the container on top of the stack, a value of the one
	// below it.
	closed := func() {
		stack = stack[:len(stack)-1]
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].expectKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return current(), false
		}
		past := dec.InputOffset() > int64(offset)
		var top *container
		if n := len(stack); n > 0 {
			top = stack[n-1]
		}
		delim, _ := tok.(json.Delim)
		switch {
		case top != nil && top.object && top.expectKey && delim == '}':
			if past {
				return current(), false
			}
			closed()
			continue
		case top != nil && top.object && top.expectKey:
			key, _ := tok.(string)
			if past {
				out := current()
				if top.started {
					out = out[:len(out)-1]
				}
				return append(out, segment{key: key, isKey: true}), true
			}
			top.at, top.started, top.expectKey = segment{key: key, isKey: true}, true, false
			continue
		case delim == ']':
			if past {
				return current(), false
			}
			closed()
			continue
		case top != nil && !top.object:
			if top.started {
				top.at.index++
			}
			top.started = true
		}
		if past {
			return current(), false
		}
		switch delim {
		case '{':
			stack = append(stack, &container{object: true, expectKey: true})
		case '[':
			stack = append(stack, &container{})
		default:
			if top != nil && top.object {
				top.expectKey = true
			}
		}
	}
}

// location is a JSON path resolved against a message's schema.
type location struct {
	path   string
	field  protoreflect.FieldDescriptor   // the last field, if known
	parent protoreflect.MessageDescriptor // the message holding the last key, if known
	key    string                         // the last key, as spelt
}

// locate names segs by proto field names as far as md's schema reaches;
// below an unknown field or inside free-form JSON (Struct, Value) it keeps
// the keys as spelt.
func locate(md protoreflect.MessageDescriptor, segs []segment) location {
	var (
		b     strings.Builder
		loc   location
		field protoreflect.FieldDescriptor // a list or map field awaiting its index or key
	)
	for _, s := range segs {
		switch {
		case field != nil && field.IsList() && !s.isKey:
			fmt.Fprintf(&b, "[%d]", s.index)
			md, field = messageOf(field), nil
		case field != nil && field.IsMap():
			fmt.Fprintf(&b, "[%s]", echo(s.key))
			md, field = messageOf(field.MapValue()), nil
		case !s.isKey:
			fmt.Fprintf(&b, "[%d]", s.index)
			md, field = nil, nil
		default:
			loc.parent, loc.key, loc.field = md, s.key, nil
			var fd protoreflect.FieldDescriptor
			if md != nil {
				if fd = md.Fields().ByJSONName(s.key); fd == nil {
					fd = md.Fields().ByTextName(s.key)
				}
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			if fd == nil {
				b.WriteString(echo(s.key))
				md, field = nil, nil
				continue
			}
			b.WriteString(string(fd.Name()))
			loc.field = fd
			if fd.IsList() || fd.IsMap() {
				field, md = fd, nil
			} else {
				md, field = messageOf(fd), nil
			}
		}
	}
	loc.path = capPath(b.String())
	return loc
}

// messageOf returns the schema below fd when its JSON is an ordinary
// message, and nil for scalars and for well-known types whose JSON is
// free-form.
func messageOf(fd protoreflect.FieldDescriptor) protoreflect.MessageDescriptor {
	if fd.Message() == nil || fd.Message().FullName().Parent() == "google.protobuf" {
		return nil
	}
	return fd.Message()
}

// unknownField describes a key the schema does not have, suggesting the
// field that was probably meant.
func unknownField(loc location) string {
	if loc.parent == nil {
		return "is not a field"
	}
	desc := fmt.Sprintf("is not a field of %s", loc.parent.FullName())
	if near := nearestField(loc.parent, loc.key); near != "" {
		desc += fmt.Sprintf(" (did you mean %s?)", near)
	}
	return desc
}

// nearestField returns the field of md whose JSON or proto name is closest
// to key, if it is close enough to be a typo.
func nearestField(md protoreflect.MessageDescriptor, key string) string {
	if len(key) > maxEcho {
		return ""
	}
	best, bestDist := "", 3
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		for _, name := range []string{fd.JSONName(), string(fd.Name())} {
			if d := editDistance(strings.ToLower(key), strings.ToLower(name)); d < bestDist {
				best, bestDist = fd.JSONName(), d
			}
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
