package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// The toy store and model stand in for a real pair of stores and a real
// model API, so the example runs with nothing but steward dev. The store
// keeps its files, and the result of each operation by its idempotency
// key, under a directory that outlives the agent, as a real store would:
// a call Steward makes again with the same key does nothing twice. The
// first copy of file-03 fails with a 503, once, to show Steward retry it.

// serveFixtures serves the toy store (under /store) and model (under /v1)
// on addr, keeping the stores under dir with files source files.
func serveFixtures(addr, dir string, files int) (url string, stop func(), err error) {
	for _, d := range []string{"source", "destination", "keys"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return "", nil, err
		}
	}
	for i := 1; i <= files; i++ {
		p := filepath.Join(dir, "source", fileName(i))
		if _, err := os.Stat(p); os.IsNotExist(err) {
			if err := os.WriteFile(p, fmt.Appendf(nil, "the %d%s file\n", i, strings.Repeat(".", i)), 0o644); err != nil {
				return "", nil, err
			}
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("--fixtures %s: %w", addr, err)
	}
	s := &toyStore{dir: dir}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /store/{op}", s.call)
	mux.HandleFunc("GET /store/status", s.status)
	mux.HandleFunc("POST /v1/chat/completions", toyModel)
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Shutdown(context.Background()) }, nil
}

type toyStore struct {
	dir string
	mu  sync.Mutex
}

// call does one operation, once per idempotency key.
func (s *toyStore) call(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Params struct {
			File  string `json:"file"`
			Files int    `json:"files"`
		} `json:"params"`
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	defer s.mu.Unlock()
	done := filepath.Join(s.dir, "keys", hashed(key))
	if result, err := os.ReadFile(done); err == nil {
		writeJSON(w, http.StatusOK, json.RawMessage(result)) // done before: the first answer
		return
	}
	if r.PathValue("op") == "copy" && req.Params.File == fileName(3) && s.firstTime("failed-once") {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"message": "the destination is busy; try again"})
		return
	}
	result, err := s.do(r.PathValue("op"), req.Params.File, req.Params.Files)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": err.Error()})
		return
	}
	_ = os.WriteFile(done, result, 0o644)
	s.log(r.PathValue("op"), req.Params.File)
	writeJSON(w, http.StatusOK, json.RawMessage(result))
}

func (s *toyStore) do(op, file string, files int) ([]byte, error) {
	switch op {
	case "list":
		entries, err := os.ReadDir(filepath.Join(s.dir, "source"))
		if err != nil {
			return nil, err
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return json.Marshal(map[string]any{"files": names})
	case "copy":
		if file == "" || filepath.Base(file) != file {
			return nil, fmt.Errorf("params.file %q is not a file's name", file)
		}
		data, err := os.ReadFile(filepath.Join(s.dir, "source", file))
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(s.dir, "destination", file), data, 0o644); err != nil {
			return nil, err
		}
		return json.Marshal(map[string]any{"copied": file, "bytes": len(data)})
	case "publish":
		if err := os.WriteFile(filepath.Join(s.dir, "destination", "MANIFEST"), fmt.Appendf(nil, "%d files\n", files), 0o644); err != nil {
			return nil, err
		}
		return json.Marshal(map[string]any{"published": "MANIFEST", "files": files})
	}
	return nil, fmt.Errorf("no operation %q", op)
}

// log appends what was done to executed.log: each line once, however
// often Steward called.
func (s *toyStore) log(op, file string) {
	f, err := os.OpenFile(filepath.Join(s.dir, "executed.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		_, _ = fmt.Fprintln(f, strings.TrimSpace(op+" "+file))
		_ = f.Close()
	}
}

// status answers Steward's status query: what the call with op_key did,
// if it was done.
func (s *toyStore) status(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	result, err := os.ReadFile(filepath.Join(s.dir, "keys", hashed(r.URL.Query().Get("op_key"))))
	if err != nil {
		writeJSON(w, http.StatusOK, map[string]string{"state": "not_accepted"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"state": "succeeded", "result": json.RawMessage(result)})
}

// firstTime reports whether marker is new, leaving it behind.
func (s *toyStore) firstTime(marker string) bool {
	p := filepath.Join(s.dir, marker)
	if _, err := os.Stat(p); err == nil {
		return false
	}
	return os.WriteFile(p, nil, 0o644) == nil
}

// toyModel answers every chat completion "yes", as an OpenAI-compatible
// API would, usage and all.
func toyModel(w http.ResponseWriter, r *http.Request) {
	var req struct{ Model string }
	_ = json.NewDecoder(r.Body).Decode(&req)
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "toy-" + hashed(r.Header.Get("Idempotency-Key"))[:12], "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": map[string]string{"role": "assistant", "content": "yes: copy it"}, "finish_reason": "stop"}},
		"usage":   map[string]int{"prompt_tokens": 24, "completion_tokens": 4},
	})
}

func hashed(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
