package rpc

import (
	"errors"
	"fmt"

	"connectrpc.com/connect"
	"github.com/steward-run/steward/pkg/errs"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Strict decoding. Connect's own codecs drop unknown JSON fields and
// unknown enum names, and protobuf keeps undefined enum numbers: a
// misspelt "DATA_SENSITIVITY_RESTRICTD" became no sensitivity at all, and
// a restricted write ran without approval. Steward's codecs refuse all of
// them, in every encoding.
//
// A codec cannot shape the error the caller sees: Connect wraps whatever
// Unmarshal returns in a message naming the Go type, outside every
// interceptor. So a refused message is not returned as an error: the codec
// empties it and leaves the reason in it, as an unknown field with a
// reserved number, and the edge interceptor (which runs next, always)
// answers with it in Steward's error shape. Had the interceptor not run,
// the handler would see an empty request, never a half-decoded one.

// refusalField is the field number a refusal travels under: the largest a
// proto may have, and one no Steward message uses.
const refusalField protowire.Number = protowire.MaxValidNumber

// MaxMessageDepth bounds how deeply a request nests messages, in every
// encoding, counted as protobuf counts recursion: each message is a level
// (in binary, a Struct's Value and ListValue are a level each; in JSON, one
// per array or object). protobuf's default, 10,000, let a 1 MiB body of
// nested arrays cost tens of megabytes and a 20 KB one seconds of CPU
// before it was refused; this is far above any real request (params may
// nest action.MaxValueDepth JSON levels).
const MaxMessageDepth = 200

// strictCodecs returns the codecs every Steward handler decodes with, one
// per name Connect negotiates.
func strictCodecs() []connect.HandlerOption {
	return []connect.HandlerOption{
		connect.WithCodec(protoCodec{}),
		connect.WithCodec(jsonCodec{name: "json"}),
		connect.WithCodec(jsonCodec{name: "json; charset=utf-8"}),
	}
}

type protoCodec struct{}

func (protoCodec) Name() string { return "proto" }

func (protoCodec) Marshal(m any) ([]byte, error) {
	pm, ok := m.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("rpc: %T is not a protobuf message", m)
	}
	return proto.Marshal(pm)
}

func (protoCodec) MarshalAppend(dst []byte, m any) ([]byte, error) {
	pm, ok := m.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("rpc: %T is not a protobuf message", m)
	}
	return proto.MarshalOptions{}.MarshalAppend(dst, pm)
}

func (protoCodec) Unmarshal(data []byte, m any) error {
	pm, ok := m.(proto.Message)
	if !ok {
		return fmt.Errorf("rpc: %T is not a protobuf message", m)
	}
	if err := (proto.UnmarshalOptions{RecursionLimit: MaxMessageDepth}).Unmarshal(data, pm); err != nil {
		refuse(pm, "", fmt.Sprintf("is not a valid %s in binary protobuf (or nests more than %d messages deep): %s",
			pm.ProtoReflect().Descriptor().FullName(), MaxMessageDepth, trimProtoPrefix(err.Error())))
		return nil
	}
	if bad := checkDefined(pm.ProtoReflect()); bad != nil {
		refuse(pm, bad.field, bad.description)
	}
	return nil
}

type jsonCodec struct{ name string }

func (c jsonCodec) Name() string { return c.name }

func (jsonCodec) Marshal(m any) ([]byte, error) {
	pm, ok := m.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("rpc: %T is not a protobuf message", m)
	}
	return protojson.Marshal(pm)
}

func (jsonCodec) MarshalAppend(dst []byte, m any) ([]byte, error) {
	pm, ok := m.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("rpc: %T is not a protobuf message", m)
	}
	return protojson.MarshalOptions{}.MarshalAppend(dst, pm)
}

func (jsonCodec) Unmarshal(data []byte, m any) error {
	pm, ok := m.(proto.Message)
	if !ok {
		return fmt.Errorf("rpc: %T is not a protobuf message", m)
	}
	if len(data) == 0 {
		refuse(pm, "", "is empty; a JSON object is required (send {} for an empty request)")
		return nil
	}
	if err := (protojson.UnmarshalOptions{RecursionLimit: MaxMessageDepth}).Unmarshal(data, pm); err != nil {
		field, desc := explainJSON(pm.ProtoReflect().Descriptor(), data, err)
		refuse(pm, field, desc)
		return nil
	}
	// protojson takes any number for an open enum.
	if bad := checkDefined(pm.ProtoReflect()); bad != nil {
		refuse(pm, bad.field, bad.description)
	}
	return nil
}

// refuse empties m and leaves in it why it was refused.
func refuse(m proto.Message, field, description string) {
	proto.Reset(m)
	b, _ := proto.Marshal(&errdetails.BadRequest_FieldViolation{Field: capPath(field), Description: errs.Cut(description, maxWords)})
	raw := protowire.AppendTag(nil, refusalField, protowire.BytesType)
	raw = protowire.AppendBytes(raw, b)
	m.ProtoReflect().SetUnknown(protoreflect.RawFields(raw))
}

// refusal returns the error a strict codec left in m, or nil.
func refusal(m any) error {
	pm, ok := m.(proto.Message)
	if !ok {
		return nil
	}
	raw := pm.ProtoReflect().GetUnknown()
	if len(raw) == 0 {
		return nil
	}
	num, typ, n := protowire.ConsumeTag(raw)
	if n < 0 || num != refusalField || typ != protowire.BytesType {
		// checkDefined refuses every unknown field, so only a message
		// that bypassed the codec gets here.
		return badRequest("", "has unknown fields")
	}
	b, m2 := protowire.ConsumeBytes(raw[n:])
	var v errdetails.BadRequest_FieldViolation
	if m2 < 0 || proto.Unmarshal(b, &v) != nil {
		return badRequest("", "could not be decoded")
	}
	return badRequest(v.Field, v.Description)
}

// badRequest is the InvalidArgument answer for a request refused at
// decoding, with a BadRequest detail when a field is named.
func badRequest(field, description string) error {
	msg := "request " + description
	if field != "" {
		msg = field + ": " + description
	}
	err := connect.NewError(connect.CodeInvalidArgument, errors.New(msg))
	if field != "" {
		if d, derr := connect.NewErrorDetail(&errdetails.BadRequest{
			FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: field, Description: description}},
		}); derr == nil {
			err.AddDetail(d)
		}
	}
	return err
}

// Decode reads data into m as a Steward handler receives a request sent
// in codec ("proto" or "json"), and returns the InvalidArgument error the
// edge answers for a request the codec refuses, nil for one it accepts.
// It lets a test see a request exactly as a handler would, without a
// server. It is safe for concurrent use on distinct messages.
func Decode(codec string, data []byte, m proto.Message) error {
	var err error
	switch codec {
	case "proto":
		err = protoCodec{}.Unmarshal(data, m)
	case "json":
		err = jsonCodec{}.Unmarshal(data, m)
	default:
		return fmt.Errorf("rpc: no codec %q", codec)
	}
	if err != nil {
		return err
	}
	return refusal(m)
}
