package calltoken_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/steward-run/steward/pkg/calltoken"
)

// A tool checks the token of a call with the key Steward publishes (here
// made on the spot), and refuses the same token a second time.
func Example() {
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"params":{"q":"incidents"},"target":"acct:42","task_id":"t1","tool":"search","tool_version":"1"}`)

	// Steward's side: the execution plane signs the call.
	token, _ := calltoken.NewSigner(key).Sign(calltoken.Claims{
		Audience: "https://tools.example/search", Method: http.MethodPost,
		TaskID: "t1", ActionID: "act-1", OpKey: "op-1", Tool: "search", ToolVersion: "1", Attempt: 1,
		BodyHash: calltoken.BodyHash(body), IssuedAt: now.Unix(), ExpiresAt: now.Add(40 * time.Second).Unix(),
	})

	// The tool's side.
	v := calltoken.NewVerifier(calltoken.NewKeySet(pub), "https://tools.example/search",
		calltoken.WithReplayCache(calltoken.NewMemoryReplayCache()),
		calltoken.WithClock(func() time.Time { return now }))
	c, err := v.Verify(token, http.MethodPost, body)
	fmt.Println(c.ActionID, c.OpKey, c.Attempt, err)
	_, err = v.Verify(token, http.MethodPost, body)
	fmt.Println(errors.Is(err, calltoken.ErrReplayed))
	// Output:
	// act-1 op-1 1 <nil>
	// true
}
