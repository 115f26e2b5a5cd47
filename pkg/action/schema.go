package action

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/steward-run/steward/pkg/errs"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// printer renders schema errors; the library needs one.
var printer = message.NewPrinter(language.English)

// Heavy bounds a process's heavy schema work: it holds a place for each
// check of more than HeavyValidationSteps and each compilation of a
// schema of more than HeavySchemaKeys, GOMAXPROCS at once. A process has
// one, held by its tool registry, and every schema it compiles checks
// under it.
type Heavy struct{ slots chan struct{} }

// NewHeavy returns a bound of GOMAXPROCS places.
func NewHeavy() *Heavy { return &Heavy{slots: make(chan struct{}, runtime.GOMAXPROCS(0))} }

// Schema is a compiled JSON Schema for a tool's parameters. It is safe for
// concurrent use.
type Schema struct {
	s     *jsonschema.Schema
	b     *bounds
	heavy *Heavy
}

// schemaURL names a contract's schema while it compiles. It is absolute, so
// that the library does not place the document in the process's working
// directory and quote that path back to whoever registered the tool.
const schemaURL = "urn:steward:tool-schema"

// CompileSchema compiles a JSON Schema document under h. An empty document accepts
// any object. The schema may not load other documents: a tool contract is
// self-contained. A document past one of the limits in bounds.go is
// refused before it is compiled, with an *errs.Error whose code is
// errs.TooLarge (or errs.Invalid for a $ref that cannot be followed) and
// no field: the caller knows which field held it.
func (h *Heavy) CompileSchema(doc string) (*Schema, error) {
	if strings.TrimSpace(doc) == "" {
		doc = `{"type":"object"}`
	}
	if len(doc) > MaxSchemaBytes {
		return nil, tooLarge("is larger than %d KiB", MaxSchemaBytes>>10)
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	b, err := measureSchema(v)
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	c.UseRegexpEngine(boundedRegexp)
	if err := c.AddResource(schemaURL, v); err != nil {
		return nil, err
	}
	if b.keys > HeavySchemaKeys {
		// Compiling is not cancellable and happens at registration and
		// on replay, so it waits as long as it must.
		h.slots <- struct{}{}
		defer func() { <-h.slots }()
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, err
	}
	return &Schema{s: s, b: b, heavy: h}, nil
}

// noLoader refuses to fetch referenced schemas: compiling a contract must
// never reach the network or the file system.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema may not load %s: a tool contract must be self-contained", url)
}

// Violation is a parameter that fails the schema: where, and why.
type Violation struct {
	// Path is a JSON Pointer into the parameters, e.g. "/recipients/0".
	Path   string
	Reason string
}

func (v *Violation) Error() string {
	path := v.Path
	if path == "" {
		path = "/"
	}
	return fmt.Sprintf("params%s: %s", strings.TrimSuffix(path, "/"), v.Reason)
}

// Validate checks params (a JSON object) against the schema and returns
// the first violation as a *Violation. Params nested deeper than
// MaxValueDepth, holding a number past MaxNumberExponent, or that would
// take more than MaxValidationSteps to check, are refused unchecked with
// an *errs.Error whose code is errs.TooLarge. A heavy check waits for its
// turn only as long as ctx lasts.
func (s *Schema) Validate(ctx context.Context, params []byte) error {
	if len(params) == 0 {
		params = []byte("{}")
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		return &Violation{Reason: "not JSON: " + err.Error()}
	}
	if err := measureValue(v, 1); err != nil {
		return err
	}
	n := 0
	if err := s.b.steps(s.b.start, v, nil, &n); err != nil {
		return err
	}
	if n > HeavyValidationSteps {
		select {
		case s.heavy.slots <- struct{}{}:
			defer func() { <-s.heavy.slots }()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	err = s.s.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &Violation{Reason: err.Error()}
	}
	leaf := deepest(ve)
	// The library quotes the value and the keyword's argument in full.
	return &Violation{Path: pointer(leaf.InstanceLocation), Reason: clipReason(leaf.ErrorKind.LocalizedString(printer))}
}

// maxReason bounds a violation's reason: an answer must not grow with the
// input.
const maxReason = 256

func clipReason(r string) string { return errs.Cut(r, maxReason) }

// deepest follows the first cause down to the most specific error: the one
// that names the offending value, not the schema keyword that grouped it.
func deepest(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	for len(e.Causes) > 0 {
		e = e.Causes[0]
	}
	return e
}

func pointer(loc []string) string {
	if len(loc) == 0 {
		return ""
	}
	var b strings.Builder
	for _, t := range loc {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return b.String()
}
