package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// The headers of a notification, as the Standard Webhooks convention
// names them (standardwebhooks.com): the delivery's id, the Unix time it
// was signed at, and its signatures.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// secretPrefix begins every signing secret.
const secretPrefix = "whsec_"

// Sign returns the signature header of body sent as delivery id at ts
// under keys: "v1," and the base64 of HMAC-SHA256(key, id.ts.body), one
// per key, separated by spaces.
func Sign(keys [][]byte, id string, ts time.Time, body []byte) string {
	signed := []byte(id + "." + strconv.FormatInt(ts.Unix(), 10) + ".")
	signed = append(signed, body...)
	sigs := make([]string, 0, len(keys))
	for _, k := range keys {
		m := hmac.New(sha256.New, k)
		m.Write(signed)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	}
	return strings.Join(sigs, " ")
}
