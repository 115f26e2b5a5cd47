package app

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
)

// TestVerifyBundleSizeCap: verify --bundle reads at most --max-bundle-mib
// of a file, and says so naming the file and the flag; a file at the cap
// is read (and, not being a bundle, fails as one); a cap out of range is
// refused.
func TestVerifyBundleSizeCap(t *testing.T) {
	dir := t.TempDir()
	over, at := filepath.Join(dir, "over.bundle"), filepath.Join(dir, "at.bundle")
	for file, size := range map[string]int{over: 1<<20 + 1, at: 1 << 20} {
		if err := os.WriteFile(file, make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"audit", "verify", "--bundle", over, "--max-bundle-mib", "1"}, 1, over + " is over 1 MiB, the most verify reads (--max-bundle-mib)"},
		{[]string{"audit", "verify", "--bundle", at, "--max-bundle-mib", "1"}, exitChainBroken, "not an audit bundle"},
		{[]string{"audit", "verify", "--bundle", at, "--max-bundle-mib", "0"}, 1, "--max-bundle-mib: 0 is not between 1 and"},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(c.args, &stdout, &stderr); code != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", c.args, code, stderr.String(), c.code, c.want)
		}
	}
}

// pieceServer streams the same pieces for every ExportBundle.
type pieceServer struct {
	stewardv1connect.UnimplementedAuditServiceHandler
	pieces []*stewardv1.ExportBundleResponse
}

func (s pieceServer) ExportBundle(_ context.Context, _ *connect.Request[stewardv1.ExportBundleRequest], stream *connect.ServerStream[stewardv1.ExportBundleResponse]) error {
	for _, p := range s.pieces {
		if err := stream.Send(p); err != nil {
			return err
		}
	}
	return nil
}

// TestExportBundleSizeCap: export holds at most --max-bundle-mib of what
// it keeps, and stops past it, naming the flag; a piece it already has
// (a blob shared by two tasks) is not counted again.
func TestExportBundleSizeCap(t *testing.T) {
	blob := func(hash string) *stewardv1.ExportBundleResponse {
		return &stewardv1.ExportBundleResponse{Piece: &stewardv1.ExportBundleResponse_Request{Request: &stewardv1.BundleBlob{Hash: hash, Data: make([]byte, 400<<10)}}}
	}
	for _, c := range []struct {
		name   string
		pieces []*stewardv1.ExportBundleResponse
		want   string
	}{
		{"one blob ten times", []*stewardv1.ExportBundleResponse{blob("a"), blob("a"), blob("a"), blob("a"), blob("a"), blob("a"), blob("a"), blob("a"), blob("a"), blob("a")}, ""},
		{"three blobs", []*stewardv1.ExportBundleResponse{blob("a"), blob("b"), blob("c")}, "the bundle is over 1 MiB (--max-bundle-mib)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path, handler := stewardv1connect.NewAuditServiceHandler(pieceServer{pieces: c.pieces}, connect.WithReadMaxBytes(8<<20))
			mux := http.NewServeMux()
			mux.Handle(path, handler)
			srv := httptest.NewServer(mux)
			defer srv.Close()
			m := newBundleMerge(&stewardv1.AuditBundle{}, 1<<20)
			err := m.fetch(context.Background(), stewardv1connect.NewAuditServiceClient(srv.Client(), srv.URL), "t1")
			if (c.want == "" && err != nil) || (c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want))) {
				t.Errorf("fetch = %v, want %q", err, c.want)
			}
		})
	}
}
