package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// MaxMessageDepth bounds how deeply a request nests messages, counted as
// protobuf counts recursion: each message, and in google.protobuf.Struct
// each Value, ListValue and Struct, is a level, so JSON params nested n
// arrays deep take about 2n. protobuf's default, 10,000, let a 1 MiB body
// of nested arrays cost tens of megabytes of stack and garbage before it
// was refused; this is far above any real request (params may nest
// action.MaxValueDepth JSON levels) and refuses such a body after a few
// hundred bytes.
const MaxMessageDepth = 200

// depthCodecs are Connect's protobuf and JSON codecs with the recursion
// limit at MaxMessageDepth; otherwise they behave as Connect's own.
func depthCodecs() []connect.HandlerOption {
	return []connect.HandlerOption{
		connect.WithCodec(binaryCodec{}),
		connect.WithCodec(jsonCodec{name: "json"}),
		connect.WithCodec(jsonCodec{name: "json; charset=utf-8"}),
	}
}

// binaryCodec is the protobuf binary codec.
type binaryCodec struct{}

func (binaryCodec) Name() string { return "proto" }

func (binaryCodec) Marshal(m any) ([]byte, error) {
	pm, err := asProto(m)
	if err != nil {
		return nil, err
	}
	return proto.Marshal(pm)
}

func (binaryCodec) MarshalAppend(dst []byte, m any) ([]byte, error) {
	pm, err := asProto(m)
	if err != nil {
		return nil, err
	}
	return proto.MarshalOptions{}.MarshalAppend(dst, pm)
}

func (binaryCodec) MarshalStable(m any) ([]byte, error) {
	pm, err := asProto(m)
	if err != nil {
		return nil, err
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(pm)
}

func (binaryCodec) Unmarshal(data []byte, m any) error {
	pm, err := asProto(m)
	if err != nil {
		return err
	}
	if err := (proto.UnmarshalOptions{RecursionLimit: MaxMessageDepth}).Unmarshal(data, pm); err != nil {
		return fmt.Errorf("unmarshal into %T: %w", m, err)
	}
	return nil
}

func (binaryCodec) IsBinary() bool { return true }

// jsonCodec is the protobuf JSON codec under one of the names Connect
// knows it by.
type jsonCodec struct{ name string }

func (c jsonCodec) Name() string { return c.name }

func (jsonCodec) Marshal(m any) ([]byte, error) {
	pm, err := asProto(m)
	if err != nil {
		return nil, err
	}
	return protojson.Marshal(pm)
}

func (jsonCodec) MarshalAppend(dst []byte, m any) ([]byte, error) {
	pm, err := asProto(m)
	if err != nil {
		return nil, err
	}
	return protojson.MarshalOptions{}.MarshalAppend(dst, pm)
}

func (c jsonCodec) MarshalStable(m any) ([]byte, error) {
	b, err := c.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func (jsonCodec) Unmarshal(data []byte, m any) error {
	pm, err := asProto(m)
	if err != nil {
		return err
	}
	if len(data) == 0 {
		return errors.New("zero-length payload is not a valid JSON object")
	}
	// DiscardUnknown as Connect's own codec does.
	opts := protojson.UnmarshalOptions{DiscardUnknown: true, RecursionLimit: MaxMessageDepth}
	if err := opts.Unmarshal(data, pm); err != nil {
		return fmt.Errorf("unmarshal into %T: %w", m, err)
	}
	return nil
}

func (jsonCodec) IsBinary() bool { return false }

func asProto(m any) (proto.Message, error) {
	pm, ok := m.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("%T is not a protobuf message", m)
	}
	return pm, nil
}
