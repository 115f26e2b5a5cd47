package archive_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/steward-run/steward/pkg/archive"
)

// startS3 runs an in-process S3-compatible server with one bucket and
// returns a store in it under prefix.
func startS3(t *testing.T, prefix string) archive.Store {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket("steward"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	env := map[string]string{"STEWARD_ARCHIVE_ACCESS_KEY": "key", "STEWARD_ARCHIVE_SECRET_KEY": "secret"}
	spec := "s3://steward/" + prefix + "?insecure=true&endpoint=" + strings.TrimPrefix(srv.URL, "http://")
	store, err := archive.Open(spec, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// TestStores runs one suite against a directory and an S3 bucket: what is
// put is got back exactly, replaced by a second put, listed directly
// under its prefix only, a missing key is ErrNotFound, and a key that
// could reach outside the store is refused.
func TestStores(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) archive.Store{
		"dir": func(t *testing.T) archive.Store {
			s, err := archive.Open(t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"s3":           func(t *testing.T) archive.Store { return startS3(t, "") },
		"s3 in prefix": func(t *testing.T) archive.Store { return startS3(t, "ops/steward") },
	} {
		t.Run(name, func(t *testing.T) {
			s, ctx := open(t), context.Background()
			if _, err := s.Get(ctx, "bundles/missing"); !errors.Is(err, archive.ErrNotFound) {
				t.Fatalf("Get of a missing key: %v, want ErrNotFound", err)
			}
			for key, data := range map[string]string{"tenants/-/a": "ay", "tenants/-/b": "bee", "tenants/acme/c": "see", "bundles/a": "first"} {
				if err := s.Put(ctx, key, []byte(data)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Put(ctx, "bundles/a", []byte("second")); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Get(ctx, "bundles/a"); err != nil || string(got) != "second" {
				t.Errorf("Get after a second Put: %q, %v", got, err)
			}
			keys, err := s.List(ctx, "tenants/-/")
			if err != nil || !slices.Equal(keys, []string{"tenants/-/a", "tenants/-/b"}) {
				t.Errorf("List tenants/-/: %v, %v", keys, err)
			}
			if keys, err := s.List(ctx, "tenants/none/"); err != nil || len(keys) != 0 {
				t.Errorf("List of an empty prefix: %v, %v", keys, err)
			}
			for range 2 { // a second Delete finds nothing, and is no error
				if err := s.Delete(ctx, "tenants/-/a"); err != nil {
					t.Fatalf("Delete: %v", err)
				}
			}
			if keys, err := s.List(ctx, "tenants/-/"); err != nil || !slices.Equal(keys, []string{"tenants/-/b"}) {
				t.Errorf("List after a Delete: %v, %v", keys, err)
			}
			for _, bad := range []string{"../escape", "bundles/../../x", "/abs", ""} {
				if err := s.Put(ctx, bad, []byte("x")); err == nil {
					t.Errorf("Put %q was taken", bad)
				}
			}
		})
	}
}

func TestOpenRefusesAnUnknownOption(t *testing.T) {
	_, err := archive.Open("s3://b/p?endpoint=h:1&regoin=x", func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), `"regoin"`) {
		t.Errorf("Open with a misspelt option: %v", err)
	}
}

// TestStoresBoundWhatTheyRead: an object past a store's bound (a hostile
// or damaged store's) is refused, not read whole into memory; one at the
// bound is read.
func TestStoresBoundWhatTheyRead(t *testing.T) {
	ctx := context.Background()
	dir, err := archive.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s3 := startS3(t, "bounded").(*archive.S3)
	for name, store := range map[string]interface {
		archive.Store
		SetMax(int64)
	}{"dir": dir, "s3": s3} {
		store.SetMax(8)
		if err := store.Put(ctx, "bundles/big", []byte("123456789")); err != nil {
			t.Fatal(err)
		}
		if err := store.Put(ctx, "bundles/fits", []byte("12345678")); err != nil {
			t.Fatal(err)
		}
		if data, err := store.Get(ctx, "bundles/big"); err == nil || !strings.Contains(err.Error(), "more than 8 bytes") {
			t.Errorf("%s: Get of 9 bytes past a bound of 8: %d bytes, %v", name, len(data), err)
		}
		if data, err := store.Get(ctx, "bundles/fits"); err != nil || len(data) != 8 {
			t.Errorf("%s: Get of 8 bytes at a bound of 8: %d bytes, %v", name, len(data), err)
		}
	}
}
