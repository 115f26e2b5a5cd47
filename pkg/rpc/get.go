package rpc

import (
	"encoding/base64"
	"net/http"
	"strings"

	"connectrpc.com/connect"
)

// getErrors writes Connect errors for requests refused before Connect
// sees them.
var getErrors = connect.NewErrorWriter()

// checkGet refuses a Connect GET whose base64 message does not decode,
// which Connect itself answers as an unknown error (HTTP 500), as if the
// server were at fault.
func checkGet(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			q := r.URL.Query()
			if q.Get("base64") == "1" {
				msg := q.Get("message")
				enc := base64.RawURLEncoding
				if strings.HasSuffix(msg, "=") {
					enc = base64.URLEncoding
				}
				if _, err := enc.DecodeString(msg); err != nil {
					_ = getErrors.Write(w, r, badRequest("message", "is not valid unpadded base64url (base64=1)"))
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}
