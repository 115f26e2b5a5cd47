package console_test

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/console"
)

func serve(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	for _, p := range console.Patterns() {
		mux.Handle(p, console.Handler())
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestEveryAssetIsServedUnderThePolicy: each file of the console is served
// with its type, the Content-Security-Policy and the headers that go with
// it; /console redirects to /console/; anything but GET or HEAD is 405.
func TestEveryAssetIsServedUnderThePolicy(t *testing.T) {
	srv := serve(t)
	names, err := fs.Glob(os.DirFS("assets"), "*")
	if err != nil || len(names) == 0 {
		t.Fatalf("assets: %v %v", names, err)
	}
	types := map[string]string{".html": "text/html", ".js": "text/javascript", ".css": "text/css"}
	for _, name := range names {
		resp, err := http.Get(srv.URL + console.Path + name)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := types[name[strings.LastIndex(name, "."):]]
		if resp.StatusCode != http.StatusOK && !(name == "index.html" && resp.StatusCode == http.StatusMovedPermanently) {
			t.Errorf("%s: %s", name, resp.Status)
		}
		if resp.StatusCode == http.StatusOK && !strings.HasPrefix(resp.Header.Get("Content-Type"), want) {
			t.Errorf("%s: Content-Type %q, want %s", name, resp.Header.Get("Content-Type"), want)
		}
		if resp.Header.Get("Content-Security-Policy") != console.Policy || resp.Header.Get("X-Content-Type-Options") != "nosniff" ||
			resp.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v", name, resp.Header)
		}
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(srv.URL + "/console")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != console.Path {
		t.Errorf("/console: %s to %q", resp.Status, resp.Header.Get("Location"))
	}
	resp, err = http.Post(srv.URL+console.Path, "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Content-Security-Policy") != console.Policy {
		t.Errorf("POST: %s", resp.Status)
	}
	for _, d := range []string{"default-src 'self'", "script-src 'self';", "style-src 'self';", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
		if !strings.Contains(console.Policy, d) || strings.Contains(console.Policy, "unsafe") {
			t.Errorf("the policy %q: want %q and nothing unsafe", console.Policy, d)
		}
	}
}

// TestTheAssetsNeedNothingThePolicyRefuses: no inline script, style or
// handler in the page, and no script that evaluates strings or writes
// markup (eval, Function, innerHTML): what the server sends is text.
func TestTheAssetsNeedNothingThePolicyRefuses(t *testing.T) {
	srv := serve(t)
	resp, err := http.Get(srv.URL + console.Path)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	inline := regexp.MustCompile(`<script>|<script [^>]*>[^<]|<style|\son[a-z]+=|style=`)
	if m := inline.Find(page); m != nil {
		t.Errorf("index.html has %q, which the policy refuses", m)
	}
	scripts, _ := fs.Glob(os.DirFS("assets"), "*.js")
	unsafe := regexp.MustCompile(`\beval\(|new Function|innerHTML|outerHTML|insertAdjacentHTML|document\.write|setAttribute\('style'`)
	for _, name := range scripts {
		src, err := os.ReadFile("assets/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if m := unsafe.Find(src); m != nil {
			t.Errorf("%s uses %q", name, m)
		}
	}
}
