// Package limits holds the documented limits on what a request may carry
// and checks the ones every RPC shares, before any handler runs: the length
// of every id, ref and name, and the number of entries in every list. A
// handler then checks what is particular to it (a task id's characters, a
// text's length, a duration's range) and looks things up knowing that
// nothing it echoes can be large.
//
// The checks find the fields by reflection and by name, so a request
// message or a field added later is covered without touching this package.
// Everything here is safe for concurrent use.
package limits

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/steward-run/steward/pkg/errs"
)

// The documented limits on request fields, in bytes or entries.
const (
	// MaxTaskID bounds a task id (task_id, parent_task_id), which is also
	// 1–64 of [A-Za-z0-9_-].
	MaxTaskID = 64
	// MaxRequestID bounds a request id.
	MaxRequestID = 128
	// MaxID bounds every other id, ref, hash, name, version and page token.
	MaxID = 256
	// MaxList bounds every repeated field and map.
	MaxList = 256
)

// maxDepth bounds how deep Check walks. No request nests this deep; a
// message that did would be refused by the decoder first.
const maxDepth = 32

// Check refuses a request with an id past its limit or a list past
// MaxList, as errs.TooLarge naming the field by its proto path
// (contract.allowed_tools, contract.context_refs[2].digest). Fields of the
// well-known types (a Struct of parameters, a Duration) are left to their
// handlers.
func Check(msg protoreflect.Message) error {
	return check(msg, "", 0)
}

func check(m protoreflect.Message, prefix string, depth int) error {
	if depth > maxDepth || strings.HasPrefix(string(m.Descriptor().FullName()), "google.protobuf.") {
		return nil
	}
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		path := prefix + string(fd.Name())
		switch {
		case fd.IsList():
			l := v.List()
			if l.Len() > MaxList {
				err = tooMany(path, l.Len())
				return false
			}
			for i := 0; i < l.Len() && err == nil; i++ {
				err = checkValue(fd, l.Get(i), fmt.Sprintf("%s[%d]", path, i), depth)
			}
		case fd.IsMap():
			mp := v.Map()
			if mp.Len() > MaxList {
				err = tooMany(path, mp.Len())
				return false
			}
			mp.Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				err = checkValue(fd.MapValue(), mv, fmt.Sprintf("%s[%v]", path, k.Interface()), depth)
				return err == nil
			})
		default:
			err = checkValue(fd, v, path, depth)
		}
		return err == nil
	})
	return err
}

func checkValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, path string, depth int) error {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return check(v.Message(), path+".", depth+1)
	case protoreflect.StringKind:
		if limit := IDLimit(string(fd.Name())); limit > 0 && len(v.String()) > limit {
			return &errs.Error{Code: errs.TooLarge, Field: path, Message: fmt.Sprintf("is %d bytes; the limit is %d", len(v.String()), limit)}
		}
	}
	return nil
}

func tooMany(path string, n int) error {
	return &errs.Error{Code: errs.TooLarge, Field: path, Message: fmt.Sprintf("has %d entries; the limit is %d", n, MaxList)}
}

// IDLimit returns the length limit of a string field that names
// something, by its proto name, or 0 for a field that is not an id (free
// text, whose limits its handler knows).
func IDLimit(field string) int {
	switch {
	case field == "task_id" || field == "parent_task_id":
		return MaxTaskID
	case field == "request_id":
		return MaxRequestID
	case strings.HasSuffix(field, "_id"), strings.HasSuffix(field, "_ref"), strings.HasSuffix(field, "_hash"):
		return MaxID
	}
	switch field {
	case "id", "name", "version", "tool", "tool_version", "edit_of", "page_token", "service_key", "compensating_tool":
		return MaxID
	}
	return 0
}
