package e2e_test

import (
	"bytes"
	"context"
	"encoding/base64"
	bin "encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// corpusEntry is one entry of e2e/testdata/bad_requests.json.
type corpusEntry struct {
	RPC          string            `json:"rpc"` // "steward.v1.Service/Method"; every RPC for a generic case
	Why          string            `json:"why"`
	ContentType  string            `json:"contentType"` // application/json when empty
	Body         string            `json:"body"`
	BodyBase64   string            `json:"bodyBase64"`   // for bytes JSON cannot carry
	Repeat       map[string]repeat `json:"repeat"`       // placeholder → text repeated, for huge bodies
	Header       map[string]string `json:"header"`       // extra request headers
	HeaderBase64 map[string]string `json:"headerBase64"` // headers with bytes JSON cannot carry
	Get          string            `json:"get"`          // a Connect GET with this query, instead of a POST
	Code         string            `json:"code"`         // the Connect code wanted, if one is
	Field        string            `json:"field"`        // the field a BadRequest detail must name, if one is
}

// repeat is [text, times].
type repeat [2]any

type corpus struct {
	Generic []corpusEntry `json:"generic"`
	Cases   []corpusEntry `json:"cases"`
}

// TestBadRequestCorpus sends every request of the committed corpus to the
// real binary: the generic ones to every RPC, the others to theirs. No bad
// request may be answered as the server's fault (5xx other than
// unavailable), and a case that names a code and field must get them.
// Afterwards the server still answers, and a task made before is intact.
func TestBadRequestCorpus(t *testing.T) {
	data, err := os.ReadFile("testdata/bad_requests.json")
	if err != nil {
		t.Fatal(err)
	}
	var c corpus
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("testdata/bad_requests.json: %v", err)
	}
	p := startBinary(t, t.TempDir())
	cl := newClients(p.url)
	witness := createTask(t, cl, "corpus-witness").Contract.TaskId
	waitStarted(t, cl, witness)
	before := getTask(t, cl, witness)

	perRPC := map[string]int{}
	protoregistry.GlobalFiles.RangeFilesByPackage("steward.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := range fd.Services().Len() {
			svc := fd.Services().Get(i)
			for j := range svc.Methods().Len() {
				m := svc.Methods().Get(j)
				rpc := fmt.Sprintf("%s/%s", svc.FullName(), m.Name())
				for _, br := range c.Generic {
					br.RPC = rpc
					perRPC[rpc]++
					sendBad(t, p.url, m, br)
				}
			}
		}
		return true
	})
	for _, br := range c.Cases {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(strings.Replace(br.RPC, "/", ".", 1)))
		m, ok := d.(protoreflect.MethodDescriptor)
		if err != nil || !ok {
			t.Errorf("corpus names %q, which is not an RPC", br.RPC)
			continue
		}
		perRPC[br.RPC]++
		sendBad(t, p.url, m, br)
	}
	for rpc, n := range perRPC {
		if n < 20 {
			t.Errorf("%s has %d bad requests in the corpus; keep at least 20", rpc, n)
		}
	}
	if after := getTask(t, cl, witness); after.Status != before.Status || after.LastSequence != before.LastSequence {
		t.Errorf("the witness task changed: %v at %d → %v at %d", before.Status, before.LastSequence, after.Status, after.LastSequence)
	}
}

func getTask(t *testing.T, c clients, taskID string) *stewardv1.Task {
	t.Helper()
	resp, err := c.query.GetTask(context.Background(), connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Msg.Task
}

// sendBad sends br to m and checks the answer.
func sendBad(t *testing.T, url string, m protoreflect.MethodDescriptor, br corpusEntry) {
	t.Helper()
	body := []byte(br.Body)
	if br.BodyBase64 != "" {
		b, err := base64.StdEncoding.DecodeString(br.BodyBase64)
		if err != nil {
			t.Fatalf("%s: bodyBase64: %v", br.Why, err)
		}
		body = b
	}
	for placeholder, r := range br.Repeat {
		text, _ := r[0].(string)
		times, _ := r[1].(float64)
		body = bytes.Replace(body, []byte(placeholder), bytes.Repeat([]byte(text), int(times)), 1)
	}
	contentType := br.ContentType
	if contentType == "" {
		contentType = "application/json"
	}
	if m.IsStreamingServer() && strings.HasPrefix(contentType, "application/") {
		// A server stream takes one enveloped message.
		contentType = strings.Replace(contentType, "application/", "application/connect+", 1)
		env := make([]byte, 5, 5+len(body))
		bin.BigEndian.PutUint32(env[1:], uint32(len(body)))
		body = append(env, body...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	target := fmt.Sprintf("%s/%s", url, br.RPC)
	var req *http.Request
	if br.Get != "" {
		req, _ = http.NewRequestWithContext(ctx, http.MethodGet, target+"?"+br.Get, nil)
	} else {
		req, _ = http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
	}
	if !m.IsStreamingServer() && br.Get == "" {
		req.Header.Set("Connect-Protocol-Version", "1")
	}
	for k, v := range br.Header {
		req.Header.Set(k, v)
	}
	for k, v := range br.HeaderBase64 {
		b, _ := base64.StdEncoding.DecodeString(v)
		req.Header[k] = []string{string(b)}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("%s → %s: %v", br.Why, br.RPC, err)
		return
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	code, field := connectError(resp, answer)
	switch {
	case resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable,
		code == "internal", code == "unknown", code == "data_loss":
		t.Errorf("%s → %s: HTTP %d %s: %.300s", br.Why, br.RPC, resp.StatusCode, code, answer)
	case br.Code != "" && code != br.Code:
		t.Errorf("%s → %s: code %q, want %q: %.300s", br.Why, br.RPC, code, br.Code, answer)
	case br.Field != "" && field != br.Field:
		t.Errorf("%s → %s: field %q, want %q: %.300s", br.Why, br.RPC, field, br.Field, answer)
	case len(answer) > 4096:
		t.Errorf("%s → %s: a %d-byte answer; an error must not grow with the input", br.Why, br.RPC, len(answer))
	}
}

// connectError returns the code and BadRequest field of a Connect error
// answer: a unary one, or the end of a stream.
func connectError(resp *http.Response, answer []byte) (code, field string) {
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/connect+") {
		for len(answer) >= 5 {
			n := int(bin.BigEndian.Uint32(answer[1:5]))
			if 5+n > len(answer) {
				break
			}
			if answer[0]&2 != 0 {
				var end struct {
					Error json.RawMessage `json:"error"`
				}
				_ = json.Unmarshal(answer[5:5+n], &end)
				answer = end.Error
				break
			}
			answer = answer[5+n:]
		}
	}
	var e struct {
		Code    string `json:"code"`
		Details []struct {
			Type  string `json:"type"`
			Value string `json:"value"`
			Debug struct {
				FieldViolations []struct {
					Field string `json:"field"`
				} `json:"fieldViolations"`
			} `json:"debug"`
		} `json:"details"`
	}
	_ = json.Unmarshal(answer, &e)
	for _, d := range e.Details {
		if len(d.Debug.FieldViolations) > 0 {
			field = d.Debug.FieldViolations[0].Field
		}
	}
	return e.Code, field
}
