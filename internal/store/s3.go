package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3 keeps objects in a bucket of an S3-compatible object store (AWS S3,
// MinIO, Ceph, Garage...), through minio-go. Several nodes configured with
// the same bucket share every object.
type S3 struct {
	client *minio.Client
	bucket string
	// retries is how many times Put tries again after a failed upload of
	// a body it can rewind; backoff is the first pause, doubled each time.
	retries int
	backoff time.Duration
	// For Presign: the keys and region, and the client of the public
	// URL (SetPublicURL), nil when clients use the same endpoint.
	accessKey, secretKey, region string
	public                       *minio.Client
}

// S3Config is what an s3:// storage URL says.
type S3Config struct {
	Endpoint  string // host:port
	AccessKey string
	SecretKey string
	Bucket    string
	Secure    bool   // https
	Region    string // us-east-1 when empty
}

// ParseS3URL reads s3://ACCESS:SECRET@host:port/bucket?secure=false&region=us-east-1.
// secure defaults to true (https); the access and secret keys may be
// percent-encoded.
func ParseS3URL(raw string) (S3Config, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "s3" {
		return S3Config{}, errors.New("must be s3://ACCESS:SECRET@host:port/bucket")
	}
	c := S3Config{Endpoint: u.Host, Secure: true, Region: "us-east-1"}
	if u.User != nil {
		c.AccessKey = u.User.Username()
		c.SecretKey, _ = u.User.Password()
	}
	c.Bucket = u.Path
	if len(c.Bucket) > 0 && c.Bucket[0] == '/' {
		c.Bucket = c.Bucket[1:]
	}
	switch {
	case c.Endpoint == "":
		return S3Config{}, errors.New("needs a host: s3://ACCESS:SECRET@host:port/bucket")
	case c.AccessKey == "" || c.SecretKey == "":
		return S3Config{}, errors.New("needs the access and secret keys: s3://ACCESS:SECRET@host:port/bucket")
	case !validBucket(c.Bucket):
		return S3Config{}, fmt.Errorf("bucket %q is not a valid bucket name (3 to 63 lower-case letters, digits, dots and hyphens)", c.Bucket)
	}
	q := u.Query()
	for k := range q {
		if k != "secure" && k != "region" {
			return S3Config{}, fmt.Errorf("unknown parameter %q (secure, region)", k)
		}
	}
	if v := q.Get("secure"); v != "" {
		if c.Secure, err = strconv.ParseBool(v); err != nil {
			return S3Config{}, errors.New("secure must be true or false")
		}
	}
	if v := q.Get("region"); v != "" {
		c.Region = v
	}
	return c, nil
}

func validBucket(b string) bool {
	if len(b) < 3 || len(b) > 63 {
		return false
	}
	for i, r := range b {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || (r == '.' || r == '-') && i > 0 && i < len(b)-1
		if !ok {
			return false
		}
	}
	return true
}

// NewS3 connects to the store, checks the keys by looking the bucket up,
// and creates the bucket when it is missing.
func NewS3(ctx context.Context, c S3Config) (*S3, error) {
	client, err := minio.New(c.Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(c.AccessKey, c.SecretKey, ""),
		Secure: c.Secure,
		Region: c.Region,
	})
	if err != nil {
		return nil, fmt.Errorf("store: s3 %s: %w", c.Endpoint, err)
	}
	s := &S3{client: client, bucket: c.Bucket, retries: 4, backoff: 200 * time.Millisecond,
		accessKey: c.AccessKey, secretKey: c.SecretKey, region: c.Region}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	exists, err := client.BucketExists(ctx, c.Bucket)
	if err != nil {
		return nil, fmt.Errorf("store: s3 %s: %w", c.Endpoint, describe(err))
	}
	if !exists {
		if err := client.MakeBucket(ctx, c.Bucket, minio.MakeBucketOptions{Region: c.Region}); err != nil {
			// Another node may have made it in the meantime.
			if code := minio.ToErrorResponse(err).Code; code != "BucketAlreadyOwnedByYou" && code != "BucketAlreadyExists" {
				return nil, fmt.Errorf("store: s3 %s: create bucket %s: %w", c.Endpoint, c.Bucket, describe(err))
			}
		}
	}
	return s, nil
}

// describe turns the store's refusals into words an operator acts on.
func describe(err error) error {
	switch minio.ToErrorResponse(err).Code {
	case "InvalidAccessKeyId":
		return fmt.Errorf("the access key is not known to the store: %w", err)
	case "SignatureDoesNotMatch":
		return fmt.Errorf("the secret key is wrong: %w", err)
	case "AccessDenied":
		return fmt.Errorf("the keys may not use this bucket: %w", err)
	}
	return err
}

func (s *S3) Kind() string { return "s3" }

// Put uploads the object. S3 acknowledges a PUT only once the object is
// stored durably, so a nil error means saved. A body that can be rewound
// (an io.Seeker: files, byte readers) is uploaded again after a failure,
// with exponential backoff, up to s.retries times.
func (s *S3) Put(ctx context.Context, key string, body io.Reader, size int64, contentType string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if contentType == "" {
		contentType = ContentType(key)
	}
	seeker, rewindable := body.(io.Seeker)
	var start int64
	if rewindable {
		var err error
		if start, err = seeker.Seek(0, io.SeekCurrent); err != nil {
			rewindable = false
		}
	}
	pause := s.backoff
	for attempt := 0; ; attempt++ {
		_, err := s.client.PutObject(ctx, s.bucket, key, body, size, minio.PutObjectOptions{ContentType: contentType})
		if err == nil {
			return nil
		}
		if !rewindable || attempt >= s.retries || ctx.Err() != nil {
			return fmt.Errorf("store: put %s: %w", key, describe(err))
		}
		if _, serr := seeker.Seek(start, io.SeekStart); serr != nil {
			return fmt.Errorf("store: put %s: %w", key, describe(err))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("store: put %s: %w", key, ctx.Err())
		case <-time.After(pause):
		}
		pause *= 2
	}
}

// Open returns the object; its Body reads ranges from the store as the
// caller seeks.
func (s *S3) Open(ctx context.Context, key string) (*Object, error) {
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	obj, err := s.client.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, s.wrap("open", key, err)
	}
	st, err := obj.Stat()
	if err != nil {
		obj.Close()
		return nil, s.wrap("open", key, err)
	}
	return &Object{Info: infoOf(st), Body: s3Body{obj, key}}, nil
}

// s3Body reads an opened object. The client asks for its bytes on the
// ETag it opened (If-Match): a 412 means another writer replaced it since,
// and is reported as ErrChanged.
type s3Body struct {
	*minio.Object
	key string
}

func (b s3Body) Read(p []byte) (int, error) {
	n, err := b.Object.Read(p)
	if err != nil && err != io.EOF && minio.ToErrorResponse(err).Code == "PreconditionFailed" {
		err = fmt.Errorf("store: read %s: %w", b.key, ErrChanged)
	}
	return n, err
}

func (s *S3) Stat(ctx context.Context, key string) (Info, error) {
	if err := CheckKey(key); err != nil {
		return Info{}, err
	}
	st, err := s.client.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return Info{}, s.wrap("stat", key, err)
	}
	return infoOf(st), nil
}

// List returns the objects under prefix in key order (the order S3 lists
// them in).
func (s *S3) List(ctx context.Context, prefix string) ([]Info, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	var out []Info
	for o := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, fmt.Errorf("store: list %s: %w", prefix, describe(o.Err))
		}
		out = append(out, infoOf(o))
	}
	return out, nil
}

func (s *S3) Delete(ctx context.Context, key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if err := s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}); err != nil && !isNoSuchKey(err) {
		return fmt.Errorf("store: delete %s: %w", key, describe(err))
	}
	return nil
}

// DeletePrefix removes every object under prefix with batched deletes.
func (s *S3) DeletePrefix(ctx context.Context, prefix string) error {
	if err := checkPrefix(prefix); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	objects := s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true})
	var listErr error
	keys := make(chan minio.ObjectInfo)
	go func() {
		defer close(keys)
		for o := range objects {
			if o.Err != nil {
				listErr = o.Err
				return
			}
			select {
			case keys <- o:
			case <-ctx.Done():
				return
			}
		}
	}()
	for e := range s.client.RemoveObjects(ctx, s.bucket, keys, minio.RemoveObjectsOptions{}) {
		if e.Err != nil && !isNoSuchKey(e.Err) {
			cancel()
			for range keys {
			}
			return fmt.Errorf("store: delete %s: %w", e.ObjectName, describe(e.Err))
		}
	}
	if listErr != nil {
		return fmt.Errorf("store: delete %s: %w", prefix, describe(listErr))
	}
	return nil
}

// Ping looks the bucket up.
func (s *S3) Ping(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("store: s3: %w", describe(err))
	}
	if !ok {
		return fmt.Errorf("store: s3: bucket %s is gone", s.bucket)
	}
	return nil
}

func (s *S3) wrap(op, key string, err error) error {
	if isNoSuchKey(err) {
		return fmt.Errorf("store: %s %s: %w", op, key, ErrNotExist)
	}
	return fmt.Errorf("store: %s %s: %w", op, key, describe(err))
}

func isNoSuchKey(err error) bool {
	code := minio.ToErrorResponse(err).Code
	return code == "NoSuchKey" || code == "NotFound"
}

func infoOf(o minio.ObjectInfo) Info {
	return Info{Key: o.Key, Size: o.Size, ModTime: o.LastModified, ContentType: o.ContentType, ETag: o.ETag}
}
