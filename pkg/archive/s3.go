package archive

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Config says where an S3-compatible bucket is and how to sign for it.
type S3Config struct {
	// Endpoint is host:port, without a scheme.
	Endpoint string
	// Insecure speaks plain HTTP (a store on a private network, a test's).
	Insecure bool
	Bucket   string
	// Prefix is put before every key ("steward/"), empty for none.
	Prefix            string
	AccessKey, Secret string
	Region            string
}

// S3 is a Store in an S3-compatible bucket, path-style, so that it works
// with stores other than AWS's (MinIO, Ceph, R2) as well.
type S3 struct {
	client *minio.Client
	bucket string
	prefix string
	max    int64 // bytes of one object read, at most (MaxObjectBytes)
}

// NewS3 returns a Store in cfg's bucket, which must exist.
func NewS3(cfg S3Config) (*S3, error) {
	if cfg.Endpoint == "" || cfg.Bucket == "" {
		return nil, fmt.Errorf("archive: an S3 store needs an endpoint and a bucket")
	}
	client, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKey, cfg.Secret, ""),
		Secure:       !cfg.Insecure,
		Region:       cfg.Region,
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		return nil, fmt.Errorf("archive: S3 store: %w", err)
	}
	if cfg.Prefix != "" && !strings.HasSuffix(cfg.Prefix, "/") {
		cfg.Prefix += "/"
	}
	return &S3{client: client, bucket: cfg.Bucket, prefix: cfg.Prefix, max: MaxObjectBytes}, nil
}

// Put writes data under key.
func (s *S3) Put(ctx context.Context, key string, data []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	_, err := s.client.PutObject(ctx, s.bucket, s.prefix+key, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: "application/octet-stream", SendContentMd5: true})
	return err
}

// Get reads key.
func (s *S3) Get(ctx context.Context, key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	obj, err := s.client.GetObject(ctx, s.bucket, s.prefix+key, minio.GetObjectOptions{})
	if err != nil {
		return nil, s3Err(err)
	}
	defer obj.Close()
	data, err := readBounded(obj, key, s.max)
	if err != nil {
		return nil, s3Err(err)
	}
	return data, nil
}

func s3Err(err error) error {
	if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
		return ErrNotFound
	}
	return err
}

// List returns the keys directly under prefix, sorted.
func (s *S3) List(ctx context.Context, prefix string) ([]string, error) {
	if err := checkKey(prefix); err != nil {
		return nil, err
	}
	var keys []string
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + prefix}) {
		if obj.Err != nil {
			return nil, obj.Err
		}
		if !strings.HasSuffix(obj.Key, "/") { // a common prefix: a folder
			keys = append(keys, strings.TrimPrefix(obj.Key, s.prefix))
		}
	}
	slices.Sort(keys)
	return keys, nil
}

// Delete removes key (S3 answers a missing key with success).
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	return s.client.RemoveObject(ctx, s.bucket, s.prefix+key, minio.RemoveObjectOptions{})
}
