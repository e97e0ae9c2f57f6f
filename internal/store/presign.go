package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Presigner is implemented by stores that can give a client a
// time-limited URL to fetch an object from the store itself (S3), so the
// node does not carry the bytes.
type Presigner interface {
	// Presign returns a URL that GETs key until expiry has passed.
	Presign(ctx context.Context, key string, expiry time.Duration) (string, error)
}

// Base returns the store under the wrappers of this package (Instrument),
// for the optional interfaces and the type of the implementation.
func Base(s Store) Store {
	for {
		u, ok := s.(interface{ Unwrap() Store })
		if !ok {
			return s
		}
		s = u.Unwrap()
	}
}

// Unwrap returns the store being measured.
func (s *instrumented) Unwrap() Store { return s.Store }

// SetPublicURL makes Presign sign URLs for base, the scheme and host
// (http://host:port, no path) at which clients reach the store, when that
// differs from the endpoint the nodes use (a private network address).
// Signing needs no request to the store.
func (s *S3) SetPublicURL(base string) error {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be http(s)://host[:port]")
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return errors.New("must be http(s)://host[:port], without a path, query or credentials")
	}
	client, err := minio.New(u.Host, &minio.Options{
		Creds:  credentials.NewStaticV4(s.accessKey, s.secretKey, ""),
		Secure: u.Scheme == "https",
		Region: s.region, // with the region known, signing asks the store nothing
	})
	if err != nil {
		return fmt.Errorf("store: public url %s: %w", base, err)
	}
	s.public = client
	return nil
}

// Presign returns a presigned GET URL of key, on the public URL when one
// was set (SetPublicURL), else on the endpoint the node uses.
func (s *S3) Presign(ctx context.Context, key string, expiry time.Duration) (string, error) {
	if err := CheckKey(key); err != nil {
		return "", err
	}
	client := s.client
	if s.public != nil {
		client = s.public
	}
	u, err := client.PresignedGetObject(ctx, s.bucket, key, expiry, nil)
	if err != nil {
		return "", fmt.Errorf("store: presign %s: %w", key, err)
	}
	return u.String(), nil
}

var _ Presigner = (*S3)(nil)
