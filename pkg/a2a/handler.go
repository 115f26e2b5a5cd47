package a2a

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/a2aproject/a2a-go/a2a"

	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
)

// Paths the handler serves on the API's port.
const (
	// CardPath is where A2A 0.3 clients look for the agent card.
	CardPath = "/.well-known/agent-card.json"
	// RPCPath is the JSON-RPC endpoint the card names.
	RPCPath = "/a2a"
)

// MaxRequestBytes bounds a JSON-RPC request body; a larger one is refused
// before anything is decoded.
const MaxRequestBytes = 1 << 20

// Config is what a Handler needs.
type Config struct {
	// Name and Description are the card's.
	Name, Description, Version string
	Skills                     []Skill
	// API is the base URL of the Connect API the handler calls as its
	// caller (this process's own, or the gateway's), read at each call:
	// the listener may be bound after the handler is built.
	API func() string
	// Client makes those calls.
	Client connect.HTTPClient
	Logger *slog.Logger
	// PublicURL is the scheme and host clients reach this endpoint at
	// ("https://steward.example.com"), named in the card. Empty: the
	// request's own, from its Host header, which any caller may set, so a
	// deployment behind a proxy or a shared cache names it.
	PublicURL string
	// KeepAlive is how often a stream with nothing to say sends an SSE
	// comment; DefaultKeepAlive when zero.
	KeepAlive time.Duration
}

// DefaultKeepAlive is under the idle timeouts of common proxies (60 s).
const DefaultKeepAlive = 15 * time.Second

// Handler serves the agent card and the JSON-RPC endpoint.
type Handler struct {
	cfg    Config
	skills map[string]Skill
}

// New returns a Handler for cfg, which must name at least one skill.
func New(cfg Config) (*Handler, error) {
	if len(cfg.Skills) == 0 {
		return nil, errors.New("a2a: no skills")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = DefaultKeepAlive
	}
	h := &Handler{cfg: cfg, skills: map[string]Skill{}}
	for _, s := range cfg.Skills {
		h.skills[s.ID] = s
	}
	return h, nil
}

// Routes are the handler's net/http patterns and handlers, to mount beside
// the API. They are plain HTTP: the card is public, and every JSON-RPC call
// is authenticated by the Connect calls it makes as its caller.
func (h *Handler) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"GET " + CardPath:  http.HandlerFunc(h.serveCard),
		"POST " + RPCPath:  http.HandlerFunc(h.serveRPC),
		"GET " + RPCPath:   http.HandlerFunc(methodNotAllowed),
		"PUT " + RPCPath:   http.HandlerFunc(methodNotAllowed),
		"PATCH " + RPCPath: http.HandlerFunc(methodNotAllowed),
	}
}

func methodNotAllowed(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Allow", "POST")
	http.Error(w, "the A2A JSON-RPC endpoint takes POST", http.StatusMethodNotAllowed)
}

// Card is the agent card, with the endpoint under base (scheme and host).
func (h *Handler) Card(base string) *a2a.AgentCard {
	card := &a2a.AgentCard{
		ProtocolVersion:    ProtocolVersion,
		Name:               h.cfg.Name,
		Description:        h.cfg.Description,
		URL:                base + RPCPath,
		PreferredTransport: a2a.TransportProtocolJSONRPC,
		Version:            h.cfg.Version,
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain", "application/octet-stream"},
		SecuritySchemes: a2a.NamedSecuritySchemes{
			"bearer": a2a.HTTPAuthSecurityScheme{Scheme: "Bearer", Description: "a Steward bearer token (a token file's or a JWT): the same as the Connect API's"},
		},
		Security: []a2a.SecurityRequirements{{"bearer": a2a.SecuritySchemeScopes{}}},
	}
	for _, s := range h.cfg.Skills {
		card.Skills = append(card.Skills, a2a.AgentSkill{ID: s.ID, Name: s.Name, Description: s.Description, Tags: nonNil(s.Tags), Examples: s.Examples})
	}
	return card
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (h *Handler) serveCard(w http.ResponseWriter, r *http.Request) {
	base := h.cfg.PublicURL
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "max-age=300")
	writeJSON(w, h.Card(base))
}

// ParsePublicURL checks a public URL for Config.PublicURL: absolute http
// or https, a host, and no query or fragment; a trailing slash is dropped.
func ParsePublicURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("%q is not an absolute http(s) URL", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("%q has a query, fragment or user: it names only where clients reach Steward", raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// clients are the Connect clients of one call, presenting its caller's
// credentials.
type clients struct {
	tasks stewardv1connect.TaskServiceClient
	query stewardv1connect.QueryServiceClient
}

func (h *Handler) clientsFor(r *http.Request) clients {
	opt := connect.WithInterceptors(forward(r.Header))
	base := h.cfg.API()
	return clients{
		tasks: stewardv1connect.NewTaskServiceClient(h.cfg.Client, base, opt),
		query: stewardv1connect.NewQueryServiceClient(h.cfg.Client, base, opt),
	}
}
