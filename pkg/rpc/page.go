package rpc

import (
	"encoding/base64"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
)

// MaxPageBytes bounds a page of a list (ListTasks, ListApprovals,
// ListDeadLetters), counted as the protobuf size of its items, on top of
// its page size: a page ends before the item that would pass it, with a
// token to continue, and always holds at least one item (every item is
// far smaller: at most about a request's 1 MiB).
const MaxPageBytes = 2 << 20

// PageItemBytes is what m weighs as an item of a page in binary: its
// bytes, and its tag and length in the page.
func PageItemBytes(m proto.Message) int {
	return protowire.SizeTag(1) + protowire.SizeBytes(proto.Size(m))
}

// PageSize checks a request's page_size: negative or past max is
// InvalidArgument on page_size, zero is def.
func PageSize(n int32, def, max int) (int, error) {
	switch {
	case n < 0:
		return 0, errs.Field("page_size", "must not be negative")
	case n == 0:
		return def, nil
	case int(n) > max:
		return 0, errs.Field("page_size", "%d exceeds the limit of %d", n, max)
	}
	return int(n), nil
}

// Position page tokens are opaque to clients; inside they are the list
// they page (kind) and a position in it, a list that only grows at its
// end, so paging is stable.
const pageTokenPrefix = "v1:"

// EncodePageToken returns the token of position pos in the list kind
// names ("tasks", "approvals"); "" for 0, the end.
func EncodePageToken(kind string, pos int) string {
	if pos == 0 {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(pageTokenPrefix + kind + ":" + strconv.Itoa(pos)))
}

// DecodePageToken returns the position of a token EncodePageToken made
// for kind in a list of n items: 0 for "", InvalidArgument on page_token
// for any other, a token of another list or past this one's end among
// them.
func DecodePageToken(kind, tok string, n int) (int, error) {
	if tok == "" {
		return 0, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	prefix := pageTokenPrefix + kind + ":"
	if err == nil && strings.HasPrefix(string(raw), prefix) {
		if pos, err := strconv.Atoi(strings.TrimPrefix(string(raw), prefix)); err == nil && pos > 0 && pos < n {
			return pos, nil
		}
	}
	return 0, errs.Field("page_token", "is not a token this server issued")
}
