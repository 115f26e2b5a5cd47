package archive

import (
	"fmt"
	"net/url"
	"strings"
)

// Open returns the Store a flag names: "s3://BUCKET/PREFIX?endpoint=HOST:PORT"
// (with "&insecure=true" for plain HTTP and "&region=R"), its keys from
// env's STEWARD_ARCHIVE_ACCESS_KEY and STEWARD_ARCHIVE_SECRET_KEY, else a
// directory's path (or "file://PATH").
func Open(spec string, env func(string) string) (Store, error) {
	if spec == "" {
		return nil, fmt.Errorf("archive: no store named")
	}
	if !strings.HasPrefix(spec, "s3://") {
		return NewDir(strings.TrimPrefix(spec, "file://"))
	}
	u, err := url.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	q := u.Query()
	for k := range q {
		if k != "endpoint" && k != "insecure" && k != "region" {
			return nil, fmt.Errorf("archive: %s: unknown option %q (endpoint, insecure, region)", spec, k)
		}
	}
	return NewS3(S3Config{
		Endpoint:  q.Get("endpoint"),
		Insecure:  q.Get("insecure") == "true",
		Region:    q.Get("region"),
		Bucket:    u.Host,
		Prefix:    strings.TrimPrefix(u.Path, "/"),
		AccessKey: env("STEWARD_ARCHIVE_ACCESS_KEY"),
		Secret:    env("STEWARD_ARCHIVE_SECRET_KEY"),
	})
}
