package stewardtest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// BadRequest is one request of the bad-request corpus that the end-to-end
// test sends to the real binary (e2e/testdata/bad_requests.json), as a
// fuzz target takes it: the body with its repeats expanded, and how it is
// encoded.
type BadRequest struct {
	// RPC is the procedure the request was written for, "" for one sent
	// to every procedure.
	RPC    string
	Body   []byte
	Binary bool // sent as binary protobuf rather than JSON
}

// BadRequestsFor returns the bodies of the corpus's requests for the RPC
// whose procedure ends in suffix ("/CreateTask"), and of those sent to
// every RPC, at most maxBody bytes each: the seeds of a fuzz target that
// decodes that RPC's requests.
func BadRequestsFor(tb testing.TB, suffix string, maxBody int) []string {
	tb.Helper()
	var out []string
	for _, br := range BadRequests(tb, maxBody) {
		if br.RPC == "" || strings.HasSuffix(br.RPC, suffix) {
			out = append(out, string(br.Body))
		}
	}
	return out
}

// SameAfterJSON fails tb unless m comes back equal from a trip through
// JSON, as a client reads it and sends it again, and returns the copy.
func SameAfterJSON[M proto.Message](tb testing.TB, m M) M {
	tb.Helper()
	data, err := protojson.Marshal(m)
	if err != nil {
		tb.Fatalf("%T does not encode as JSON: %v", m, err)
	}
	again := m.ProtoReflect().New().Interface().(M)
	if err := protojson.Unmarshal(data, again); err != nil || !proto.Equal(again, m) {
		tb.Fatalf("%T is not itself after a trip through JSON (%v):\n%v\n%v", m, err, m, again)
	}
	return again
}

// BadRequests returns the corpus's requests whose bodies are at most
// maxBody bytes: the seeds of the fuzz targets that decode requests, so
// that every bad request found so far is where fuzzing starts.
func BadRequests(tb testing.TB, maxBody int) []BadRequest {
	tb.Helper()
	_, here, _, _ := runtime.Caller(0)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "..", "e2e", "testdata", "bad_requests.json"))
	if err != nil {
		tb.Fatal(err)
	}
	type entry struct {
		RPC         string            `json:"rpc"`
		ContentType string            `json:"contentType"`
		Body        string            `json:"body"`
		BodyBase64  string            `json:"bodyBase64"`
		Repeat      map[string][2]any `json:"repeat"`
	}
	var corpus struct{ Generic, Cases []entry }
	if err := json.Unmarshal(data, &corpus); err != nil {
		tb.Fatalf("bad_requests.json: %v", err)
	}
	var out []BadRequest
	for _, e := range append(corpus.Generic, corpus.Cases...) {
		body := []byte(e.Body)
		if e.BodyBase64 != "" {
			if body, err = base64.StdEncoding.DecodeString(e.BodyBase64); err != nil {
				tb.Fatalf("bad_requests.json: %v", err)
			}
		}
		for placeholder, r := range e.Repeat {
			text, _ := r[0].(string)
			times, _ := r[1].(float64)
			body = bytes.Replace(body, []byte(placeholder), bytes.Repeat([]byte(text), int(times)), 1)
		}
		if len(body) <= maxBody {
			out = append(out, BadRequest{RPC: e.RPC, Body: body, Binary: e.ContentType == "application/proto"})
		}
	}
	return out
}
