package adapter_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/execution/adapter"
)

func TestHTTPStatusParsesAnswers(t *testing.T) {
	tests := []struct {
		name    string
		code    int
		body    string
		want    adapter.StatusAnswer
		wantErr bool
	}{
		{name: "succeeded", code: 200, body: `{"state":"succeeded","result":{"charge":"ch_1"}}`,
			want: adapter.StatusAnswer{State: adapter.StateSucceeded, Result: []byte(`{"charge":"ch_1"}`)}},
		{name: "failed", code: 200, body: `{"state":"failed","reason":"card declined"}`,
			want: adapter.StatusAnswer{State: adapter.StateFailed, Reason: "card declined"}},
		{name: "in progress", code: 200, body: `{"state":"in_progress"}`,
			want: adapter.StatusAnswer{State: adapter.StateInProgress}},
		{name: "not accepted", code: 200, body: `{"state":"not_accepted","result":null}`,
			want: adapter.StatusAnswer{State: adapter.StateNotAccepted}},
		{name: "unknown state", code: 200, body: `{"state":"done"}`, wantErr: true},
		{name: "no state", code: 200, body: `{"result":{}}`, wantErr: true},
		{name: "not JSON", code: 200, body: `succeeded`, wantErr: true},
		{name: "reason not a string", code: 200, body: `{"state":"failed","reason":{"x":1}}`, wantErr: true},
		{name: "server error", code: 500, body: `{"state":"succeeded"}`, wantErr: true},
		{name: "not found", code: 404, body: `{"message":"no such key"}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := stewardtest.StartTool(t).AnswerStatus(stewardtest.Answer{Code: tt.code, Body: tt.body})
			a := adapter.NewHTTP(ts.Client())

			got, err := a.Status(context.Background(), httpRequest(httpTool(ts.URL+"/call", ts.URL+"/status", 0), "op-1"))

			if tt.wantErr {
				if err == nil {
					t.Fatalf("got answer %+v, want an error", got)
				}
				if errors.Is(err, adapter.ErrNoStatusQuery) {
					t.Errorf("error %v claims there is no status query", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.State != tt.want.State || string(got.Result) != string(tt.want.Result) || got.Reason != tt.want.Reason {
				t.Errorf("got {%s %s %q}, want {%s %s %q}",
					got.State, got.Result, got.Reason, tt.want.State, tt.want.Result, tt.want.Reason)
			}
		})
	}
}

func TestHTTPStatusSendsTheOpKeyEscaped(t *testing.T) {
	ts := stewardtest.StartTool(t)
	a := adapter.NewHTTP(ts.Client())
	const key = "op key/with&odd=chars?é#"

	_, err := a.Status(context.Background(), httpRequest(httpTool(ts.URL+"/call", ts.URL+"/status?tenant=a", 0), key))
	if err != nil {
		t.Fatal(err)
	}
	asked := statusQueries(ts)
	if len(asked) != 1 || ts.Asks(key) != 1 {
		t.Fatalf("tool got %d status queries, %d about %q; want the one", len(asked), ts.Asks(key), key)
	}
	if q := asked[0].Query; q != "op_key=op+key%2Fwith%26odd%3Dchars%3F%C3%A9%23&tenant=a" {
		t.Errorf("query = %q, want the op_key escaped and the url's own query kept", q)
	}
}

func TestHTTPStatusWithoutStatusURL(t *testing.T) {
	ts := stewardtest.StartTool(t)
	a := adapter.NewHTTP(ts.Client())

	_, err := a.Status(context.Background(), httpRequest(httpTool(ts.URL+"/call", "", 0), "op-1"))
	if !errors.Is(err, adapter.ErrNoStatusQuery) {
		t.Fatalf("err = %v, want ErrNoStatusQuery", err)
	}
	if asked := statusQueries(ts); len(asked) != 0 {
		t.Errorf("a status query was sent: %q", asked[0].Query)
	}
}

// statusQueries returns the status queries the tool got.
func statusQueries(ts *stewardtest.Tool) []stewardtest.Request {
	var out []stewardtest.Request
	for _, r := range ts.Requests() {
		if r.Method == http.MethodGet {
			out = append(out, r)
		}
	}
	return out
}
