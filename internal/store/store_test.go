package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onair/onair/internal/miniotest"
)

func TestLocal(t *testing.T) {
	s, err := NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	conformance(t, s)
}

// conformance is what every Store must do; each implementation's test runs
// it against a real store.
func conformance(t *testing.T, s Store) {
	ctx := context.Background()
	t.Run("put, stat, open", func(t *testing.T) {
		if err := PutBytes(ctx, s, "shows/1/seg-000001.m4s", []byte("first"), "video/mp4"); err != nil {
			t.Fatal(err)
		}
		if err := PutBytes(ctx, s, "shows/1/seg-000001.m4s", []byte("second!"), "video/mp4"); err != nil {
			t.Fatal(err)
		}
		info, err := s.Stat(ctx, "shows/1/seg-000001.m4s")
		if err != nil || info.Size != 7 || info.ETag == "" {
			t.Fatalf("stat %+v %v", info, err)
		}
		obj, err := s.Open(ctx, "shows/1/seg-000001.m4s")
		if err != nil {
			t.Fatal(err)
		}
		defer obj.Body.Close()
		if _, err := obj.Body.Seek(3, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		rest, _ := io.ReadAll(obj.Body)
		if string(rest) != "ond!" || obj.Size != 7 {
			t.Fatalf("read %q size %d", rest, obj.Size)
		}
	})
	t.Run("unknown size", func(t *testing.T) {
		if err := s.Put(ctx, "users/7/avatar.jpg", strings.NewReader("jpeg"), -1, "image/jpeg"); err != nil {
			t.Fatal(err)
		}
		if got, err := ReadAll(ctx, s, "users/7/avatar.jpg"); err != nil || string(got) != "jpeg" {
			t.Fatalf("%q %v", got, err)
		}
	})
	t.Run("missing keys", func(t *testing.T) {
		if _, err := s.Open(ctx, "shows/1/nope.m4s"); !IsNotExist(err) {
			t.Fatalf("open: %v", err)
		}
		if _, err := s.Stat(ctx, "shows/404/nope.m4s"); !IsNotExist(err) {
			t.Fatalf("stat: %v", err)
		}
		if err := s.Delete(ctx, "shows/404/nope.m4s"); err != nil {
			t.Fatalf("delete: %v", err)
		}
	})
	t.Run("bad keys", func(t *testing.T) {
		for _, k := range []string{"", "/abs", "a/../b", "a//b", "a/./b", "dir/", `a\b`} {
			if err := PutBytes(ctx, s, k, []byte("x"), ""); err == nil {
				t.Errorf("put %q accepted", k)
			}
		}
		if err := s.DeletePrefix(ctx, "shows"); err == nil {
			t.Error("prefix without a trailing slash accepted")
		}
	})
	t.Run("list and delete a prefix", func(t *testing.T) {
		for _, k := range []string{"shows/2/a.m4s", "shows/2/b.m4s", "shows/2/sub/c.jpg", "shows/20/other.m4s"} {
			if err := PutBytes(ctx, s, k, []byte(k), ""); err != nil {
				t.Fatal(err)
			}
		}
		list, err := s.List(ctx, "shows/2/")
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, i := range list {
			keys = append(keys, i.Key)
		}
		if strings.Join(keys, ",") != "shows/2/a.m4s,shows/2/b.m4s,shows/2/sub/c.jpg" {
			t.Fatalf("list %v", keys)
		}
		if err := s.DeletePrefix(ctx, "shows/2/"); err != nil {
			t.Fatal(err)
		}
		if list, _ := s.List(ctx, "shows/2/"); len(list) != 0 {
			t.Fatalf("left %v", list)
		}
		if _, err := s.Stat(ctx, "shows/20/other.m4s"); err != nil {
			t.Fatalf("a sibling prefix was deleted: %v", err)
		}
	})
	t.Run("concurrent puts of one key leave one whole object", func(t *testing.T) {
		var wg sync.WaitGroup
		bodies := [][]byte{bytes.Repeat([]byte("a"), 1<<16), bytes.Repeat([]byte("b"), 1<<16)}
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := PutBytes(ctx, s, "shows/3/race.m4s", bodies[i%2], ""); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		got, err := ReadAll(ctx, s, "shows/3/race.m4s")
		if err != nil || (!bytes.Equal(got, bodies[0]) && !bytes.Equal(got, bodies[1])) {
			t.Fatalf("torn object (%d bytes) %v", len(got), err)
		}
	})
	t.Run("ping", func(t *testing.T) {
		if err := s.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func TestS3(t *testing.T) {
	srv := miniotest.Start(t)
	cfg, err := ParseS3URL(srv.URL("onair-store-test"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewS3(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	conformance(t, s)

	t.Run("a bucket made by another node is fine", func(t *testing.T) {
		if _, err := NewS3(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("presigned URLs fetch the object, on the public URL", func(t *testing.T) {
		if err := PutBytes(context.Background(), s, "shows/9/seg-000001.ts", []byte("segment"), "video/mp2t"); err != nil {
			t.Fatal(err)
		}
		if err := s.SetPublicURL("http://" + srv.Addr); err != nil {
			t.Fatal(err)
		}
		raw, err := s.Presign(context.Background(), "shows/9/seg-000001.ts", time.Minute)
		if err != nil || !strings.HasPrefix(raw, "http://"+srv.Addr+"/") {
			t.Fatalf("presign %q %v", raw, err)
		}
		resp, err := http.Get(raw)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "segment" {
			t.Fatalf("presigned GET: %d %q", resp.StatusCode, body)
		}
		if p, ok := Base(s).(Presigner); !ok || p != Presigner(s) {
			t.Fatal("Base does not return the S3 store")
		}
		for _, bad := range []string{"ftp://h", "http://h/path", "http://u:p@h", "h:9000"} {
			if err := s.SetPublicURL(bad); err == nil {
				t.Errorf("public URL %q accepted", bad)
			}
		}
	})
	t.Run("an object replaced while read", func(t *testing.T) {
		ctx := context.Background()
		const key = "shows/9/index.jsonl"
		if err := PutBytes(ctx, s, key, []byte("old index"), "application/json"); err != nil {
			t.Fatal(err)
		}
		obj, err := s.Open(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if err := PutBytes(ctx, s, key, []byte("new index, longer"), "application/json"); err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(obj.Body)
		obj.Body.Close()
		if !errors.Is(err, ErrChanged) {
			t.Fatalf("read of a replaced object: %q, %v; want ErrChanged", data, err)
		}
		// ReadAll opens it again and reads the new one.
		r := &replacing{Store: s, key: key, with: []byte("newest index")}
		data, err = ReadAll(ctx, r, key)
		if err != nil || string(data) != "newest index" || r.opens != 2 {
			t.Fatalf("ReadAll: %q, %v after %d opens", data, err, r.opens)
		}
		// Replaced at every opening: ReadAll gives up after three.
		r = &replacing{Store: s, key: key, with: []byte("busy index"), every: true}
		if data, err = ReadAll(ctx, r, key); !errors.Is(err, ErrChanged) || r.opens != 3 {
			t.Fatalf("ReadAll of an object replaced at every read: %q, %v after %d opens", data, err, r.opens)
		}
	})
	t.Run("wrong keys are named", func(t *testing.T) {
		bad := cfg
		bad.SecretKey = "not-the-secret"
		if _, err := NewS3(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "secret key is wrong") {
			t.Fatalf("wrong secret: %v", err)
		}
		bad = cfg
		bad.AccessKey = "nobody"
		if _, err := NewS3(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "access key is not known") {
			t.Fatalf("unknown access key: %v", err)
		}
	})
}

// replacing is a store whose object under key is replaced right after its
// first opening (every opening with every), as another node rewriting it
// would.
type replacing struct {
	Store
	key   string
	with  []byte
	every bool
	opens int
}

func (r *replacing) Open(ctx context.Context, key string) (*Object, error) {
	obj, err := r.Store.Open(ctx, key)
	r.opens++
	if err == nil && key == r.key && (r.opens == 1 || r.every) {
		// Other bytes each time: S3's ETag is their digest.
		err = PutBytes(ctx, r.Store, key, fmt.Appendf(r.with, "%.*s", r.opens-1, "++++++++"), "application/json")
	}
	return obj, err
}

func TestParseS3URL(t *testing.T) {
	good, err := ParseS3URL("s3://AK:S%2Fk@minio.local:9000/media?secure=false&region=eu-west-1")
	if err != nil {
		t.Fatal(err)
	}
	if good != (S3Config{Endpoint: "minio.local:9000", AccessKey: "AK", SecretKey: "S/k", Bucket: "media", Region: "eu-west-1"}) {
		t.Fatalf("%+v", good)
	}
	if d, _ := ParseS3URL("s3://AK:SK@s3.example.com/media"); !d.Secure || d.Region != "us-east-1" {
		t.Fatalf("defaults %+v", d)
	}
	for raw, want := range map[string]string{
		"http://AK:SK@h/media":             "must be s3://",
		"s3://AK:SK@/media":                "needs a host",
		"s3://h:9000/media":                "access and secret keys",
		"s3://AK:SK@h:9000/":               "not a valid bucket",
		"s3://AK:SK@h:9000/Media":          "not a valid bucket",
		"s3://AK:SK@h:9000/m/sub":          "not a valid bucket",
		"s3://AK:SK@h:9000/media?secure=x": "secure must be",
		"s3://AK:SK@h:9000/media?tls=1":    "unknown parameter",
	} {
		if _, err := ParseS3URL(raw); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", raw, err, want)
		}
	}
}

func TestS3Unreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = NewS3(ctx, S3Config{Endpoint: addr, AccessKey: "a", SecretKey: "b", Bucket: "media", Region: "us-east-1"})
	if err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("unreachable store: %v", err)
	}
}
