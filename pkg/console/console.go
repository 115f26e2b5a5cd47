// Package console serves Steward's web console: a page that people use to
// look at tasks and decide what waits for them, from assets embedded in
// the binary (hand-written ES modules and CSS: no build step). The page
// talks to the same Connect services as every other client, in Connect's
// JSON protocol, with the caller's own bearer token; the console holds no
// authority of its own, so nothing it serves needs a token.
//
// Handler is safe for concurrent use.
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// Path is where the console is served, on the API's own port.
const Path = "/console/"

//go:embed assets
var assets embed.FS

// Policy is the Content-Security-Policy every answer carries: scripts,
// styles and calls from this origin only, no inline script or eval, and no
// framing, so that no other page can lay the approve button under a click
// of its own.
const Policy = "default-src 'self'; script-src 'self'; style-src 'self'; " +
	"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'"

// Handler serves the console under Path, and redirects "/console" there.
// Every answer is sent with Policy and headers that keep the browser from
// guessing types and from sending the console's address anywhere.
func Handler() http.Handler {
	files, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the directory is embedded above: it is there
	}
	static := http.StripPrefix(Path, http.FileServerFS(files))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", Policy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		// A new binary may serve new assets under the same names.
		h.Set("Cache-Control", "no-cache")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "the console is read with GET", http.StatusMethodNotAllowed)
			return
		}
		if !strings.HasPrefix(r.URL.Path, Path) {
			http.Redirect(w, r, Path, http.StatusMovedPermanently)
			return
		}
		static.ServeHTTP(w, r)
	})
}

// Patterns are the net/http ServeMux patterns Handler answers: the
// console's tree, and its name without the slash, which redirects.
func Patterns() []string { return []string{strings.TrimSuffix(Path, "/"), Path} }
