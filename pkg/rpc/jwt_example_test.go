package rpc_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/steward-run/steward/pkg/rpc"
)

// An identity provider's key signs a token; Steward holds the public half
// in a JWKS file and reads the caller's identity from the token's claims.
func ExampleJWTVerifier() {
	raw, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	key, _ := jwk.Import(raw)
	_ = key.Set(jwk.KeyIDKey, "idp-2026")
	pub, _ := key.PublicKey()
	set := jwk.NewSet()
	_ = set.AddKey(pub)
	dir, _ := os.MkdirTemp("", "jwks")
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "jwks.json")
	b, _ := json.Marshal(set)
	_ = os.WriteFile(file, b, 0o600)

	keys, err := rpc.LoadJWKS(file)
	if err != nil {
		fmt.Println(err)
		return
	}
	v, _ := rpc.NewJWTVerifier(keys, rpc.JWTConfig{Audience: "steward", Issuer: "https://id.example.com"})

	tok, _ := jwt.NewBuilder().Issuer("https://id.example.com").Audience([]string{"steward"}).
		Subject("user:ann").Expiration(time.Now().Add(time.Hour)).Claim("roles", []string{"operator"}).Build()
	signed, _ := jwt.Sign(tok, jwt.WithKey(jwa.ES256(), key))

	id, err := v.Verify(context.Background(), string(signed))
	fmt.Println(id.Principal, id.Roles, err)
	_, err = v.Verify(context.Background(), "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1c2VyOnJvb3QifQ.")
	fmt.Println(err)
	// Output:
	// user:ann [operator] <nil>
	// the JWT is unsigned (alg "none"), and an unsigned token proves nothing
}
