package users

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/imaging"
	"github.com/onair/onair/internal/store"
)

// Profile images (and, through EncodeImage and PutImage, the image of a
// show). An upload (JPEG, PNG, GIF or WebP, at most
// SettingImageMaxBytes) is decoded by the service's imaging.Decoder within
// SettingImageDecodeMB, cropped to the kind's shape around its centre,
// scaled down to fit and re-encoded as a JPEG, so what is served is
// always a plain, metadata-free JPEG of a known size whatever was sent.
// It is stored through core.Store under users/{id}/{kind}-{hash}.jpg (the
// hash of the JPEG: a new image is a new URL, cacheable for ever) and the
// previous one is deleted.

// SettingImageMaxBytes bounds one uploaded image: an avatar, a cover or
// the image of a show.
const SettingImageMaxBytes = "ONAIR_IMAGE_MAX_BYTES"

// DefaultImageMaxBytes is its default: 2 MiB, so an avatar and a cover fit
// in one request under app.BodyLimit.
const DefaultImageMaxBytes = 2 << 20

// SettingImageDecodeMB bounds the memory of the image decodes in flight,
// together, in MB: a small file can decode to a huge bitmap (a 310 KB PNG
// to 320 MB), so an image whose decode would not fit is refused from its
// header, and one that has to wait longer than imageDecodeWait for its
// share is answered 503.
const SettingImageDecodeMB = "ONAIR_IMAGE_DECODE_MB"

// DefaultImageDecodeMB is its default.
const DefaultImageDecodeMB = 256

// imageDecodeWait is how long an upload waits for its share of the decode
// budget before it is answered 503 with Retry-After.
const imageDecodeWait = 5 * time.Second

// ImageKind is a profile image's purpose and its served shape.
type ImageKind struct {
	Name          string
	Width, Height int
}

// The profile's images.
var (
	Avatar = ImageKind{"avatar", 512, 512}
	Cover  = ImageKind{"cover", 1600, 400}
)

// SetImage stores an uploaded image as the user's avatar or cover.
func (s *Service) SetImage(ctx context.Context, id int64, kind ImageKind, data []byte) (*User, error) {
	out, err := s.EncodeImage(ctx, kind, data)
	if err != nil {
		return nil, err
	}
	key, err := s.PutImage(ctx, fmt.Sprintf("users/%d", id), kind, out)
	if err != nil {
		return nil, err
	}
	u, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	col, field := "avatar_key", &u.AvatarKey
	if kind == Cover {
		col, field = "cover_key", &u.CoverKey
	}
	old := *field
	*field = &key
	if err := s.Update(ctx, u, col); err != nil {
		return nil, err
	}
	if old != nil && *old != key {
		if err := s.DeleteImage(ctx, *old); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// EncodeImage checks an uploaded image (size, type, pixels, decoded
// size) and answers it cropped, scaled and re-encoded as a JPEG of kind's
// shape. A refusal is a 413 or a 422 on the field kind.Name, or a 503
// with Retry-After when other decodes hold the budget. The shows module
// uses it for the image of a show.
func (s *Service) EncodeImage(ctx context.Context, kind ImageKind, data []byte) ([]byte, error) {
	if s.store == nil {
		return nil, fmt.Errorf("users: no media store")
	}
	if len(data) > s.maxImage {
		return nil, s.tooLarge(kind)
	}
	out, err := s.images.JPEG(ctx, data, kind.Width, kind.Height)
	var tl *imaging.TooLargeError
	switch {
	case errors.Is(err, imaging.ErrNotImage):
		return nil, app.Validation{kind.Name: "must be a JPEG, PNG, GIF or WebP image"}.Err()
	case errors.As(err, &tl) && int64(tl.Width)*int64(tl.Height) > imaging.MaxPixels:
		return nil, app.Validation{kind.Name: "has too many pixels (at most 40 megapixels)"}.Err()
	case errors.As(err, &tl):
		return nil, app.Validation{kind.Name: fmt.Sprintf("decodes to %d MB, more than the %d MB this server decodes at once; send fewer pixels or 8 bits a channel",
			tl.Cost>>20, tl.Budget>>20)}.Err()
	case errors.Is(err, imaging.ErrBusy):
		return nil, &app.Error{Status: http.StatusServiceUnavailable, Code: "busy",
			Message: "the server is decoding other images; retry later", RetryAfter: int(imageDecodeWait / time.Second)}
	case err != nil:
		return nil, fmt.Errorf("users: encode %s: %w", kind.Name, err)
	}
	return out, nil
}

// PutImage stores an image EncodeImage made as dir/{kind}-{hash}.jpg and
// answers that key. The same image under the same dir is the same key.
func (s *Service) PutImage(ctx context.Context, dir string, kind ImageKind, jpg []byte) (string, error) {
	sum := sha256.Sum256(jpg)
	key := fmt.Sprintf("%s/%s-%s.jpg", dir, kind.Name, hex.EncodeToString(sum[:8]))
	if err := s.store.Put(ctx, key, bytes.NewReader(jpg), int64(len(jpg)), "image/jpeg"); err != nil {
		return "", fmt.Errorf("users: store %s: %w", kind.Name, err)
	}
	return key, nil
}

// DeleteImage removes a stored image (a missing one is no error).
func (s *Service) DeleteImage(ctx context.Context, key string) error {
	if err := s.store.Delete(ctx, key); err != nil && !errors.Is(err, store.ErrNotExist) {
		return fmt.Errorf("users: delete the image %s: %w", key, err)
	}
	return nil
}

// imageFile is the file name part of a stored profile image's key.
var imageFile = regexp.MustCompile(`^(avatar|cover)-[0-9a-f]{16}\.jpg$`)

// serveImage is GET /media/users/:id/:file, an uploaded profile image.
// Its name carries its hash, so it is cached for a year.
func (s *Service) serveImage(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	file := c.Params("file")
	if err != nil || id < 1 || !imageFile.MatchString(file) || s.store == nil {
		return fiber.ErrNotFound
	}
	obj, err := s.store.Open(c.UserContext(), fmt.Sprintf("users/%d/%s", id, file))
	if errors.Is(err, store.ErrNotExist) {
		return fiber.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("users: open image: %w", err)
	}
	defer obj.Body.Close()
	data, err := io.ReadAll(io.LimitReader(obj.Body, int64(s.maxImage)*4))
	if err != nil {
		return fmt.Errorf("users: read image: %w", err)
	}
	c.Set(fiber.HeaderContentType, "image/jpeg")
	c.Set(fiber.HeaderCacheControl, "public, max-age=31536000, immutable")
	c.Set("X-Content-Type-Options", "nosniff")
	return c.Send(data)
}

// MaxImageBytes is the upload limit of one profile image.
func (s *Service) MaxImageBytes() int { return s.maxImage }
