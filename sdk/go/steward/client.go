package steward

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
)

// Client calls one Steward. It is safe for concurrent use.
type Client struct {
	tasks      stewardv1connect.TaskServiceClient
	query      stewardv1connect.QueryServiceClient
	governance stewardv1connect.GovernanceServiceClient
	actions    stewardv1connect.ActionServiceClient
	tools      stewardv1connect.ToolServiceClient
	schedules  stewardv1connect.ScheduleServiceClient
	rollouts   stewardv1connect.RolloutServiceClient
	retry      Retry
	newID      func() string
}

// Option configures a Client.
type Option func(*config)

type config struct {
	http  connect.HTTPClient
	token string
	retry Retry
	newID func() string
	opts  []connect.ClientOption
}

// WithToken presents token as a bearer token on every call.
func WithToken(token string) Option { return func(c *config) { c.token = token } }

// WithHTTPClient sends the calls through h (default: a client with a 60 s
// timeout, which outlasts GetAction's longest wait).
func WithHTTPClient(h connect.HTTPClient) Option { return func(c *config) { c.http = h } }

// WithRetry replaces the retry policy (DefaultRetry).
func WithRetry(r Retry) Option { return func(c *config) { c.retry = r } }

// WithIDs makes the ids the client chooses for commands with newID
// (default: 128 random bits in hex): a test's, to know them in advance.
func WithIDs(newID func() string) Option { return func(c *config) { c.newID = newID } }

// WithConnectOptions passes options to the Connect clients, such as
// connect.WithGRPC() or connect.WithProtoJSON().
func WithConnectOptions(opts ...connect.ClientOption) Option {
	return func(c *config) { c.opts = append(c.opts, opts...) }
}

// New returns a client of the Steward at baseURL, e.g.
// http://127.0.0.1:7700.
func New(baseURL string, opts ...Option) *Client {
	c := config{http: &http.Client{Timeout: 60 * time.Second}, retry: DefaultRetry, newID: randomID}
	for _, o := range opts {
		o(&c)
	}
	if c.token != "" {
		c.opts = append(c.opts, connect.WithInterceptors(Bearer(c.token)))
	}
	baseURL = strings.TrimSuffix(baseURL, "/")
	return &Client{
		tasks:      stewardv1connect.NewTaskServiceClient(c.http, baseURL, c.opts...),
		query:      stewardv1connect.NewQueryServiceClient(c.http, baseURL, c.opts...),
		governance: stewardv1connect.NewGovernanceServiceClient(c.http, baseURL, c.opts...),
		actions:    stewardv1connect.NewActionServiceClient(c.http, baseURL, c.opts...),
		tools:      stewardv1connect.NewToolServiceClient(c.http, baseURL, c.opts...),
		schedules:  stewardv1connect.NewScheduleServiceClient(c.http, baseURL, c.opts...),
		rollouts:   stewardv1connect.NewRolloutServiceClient(c.http, baseURL, c.opts...),
		retry:      c.retry,
		newID:      c.newID,
	}
}

// orNew returns id, or a new one when it is empty.
func (c *Client) orNew(id string) string {
	if id != "" {
		return id
	}
	return c.newID()
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// Bearer returns an interceptor that presents token on every call, unary
// or streaming: for the generated clients of services this SDK does not
// wrap (an auditor's AuditService).
func Bearer(token string) connect.Interceptor { return bearer(token) }

type bearer string

func (b bearer) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set("Authorization", "Bearer "+string(b))
		return next(ctx, req)
	}
}

func (b bearer) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		conn.RequestHeader().Set("Authorization", "Bearer "+string(b))
		return conn
	}
}

func (b bearer) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}
