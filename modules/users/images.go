package users

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/gif" // decoders of the accepted uploads
	"image/jpeg"
	_ "image/png"
	"io"
	"net/http"
	"regexp"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"golang.org/x/image/draw"
	_ "golang.org/x/image/webp"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/store"
)

// Profile images (and, through EncodeImage and PutImage, the image of a
// show). An upload (JPEG, PNG, GIF or WebP, at most
// SettingImageMaxBytes) is decoded, cropped to the kind's shape around its
// centre, scaled down to fit and re-encoded as a JPEG, so what is served
// is always a plain, metadata-free JPEG of a known size whatever was sent.
// It is stored through core.Store under users/{id}/{kind}-{hash}.jpg (the
// hash of the JPEG: a new image is a new URL, cacheable for ever) and the
// previous one is deleted.

// SettingImageMaxBytes bounds one uploaded image: an avatar, a cover or
// the image of a show.
const SettingImageMaxBytes = "ONAIR_IMAGE_MAX_BYTES"

// DefaultImageMaxBytes is its default: 2 MiB, so an avatar and a cover fit
// in one request under app.BodyLimit.
const DefaultImageMaxBytes = 2 << 20

// maxImagePixels refuses decompression bombs: a small file that decodes to
// a huge bitmap.
const maxImagePixels = 40_000_000

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

var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// SetImage stores an uploaded image as the user's avatar or cover.
func (s *Service) SetImage(ctx context.Context, id int64, kind ImageKind, data []byte) (*User, error) {
	out, err := s.EncodeImage(kind, data)
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

// EncodeImage checks an uploaded image (size, type, pixels) and answers it
// cropped, scaled and re-encoded as a JPEG of kind's shape. A refusal is a
// 413 or a 422 on the field kind.Name. The shows module uses it for the
// image of a show.
func (s *Service) EncodeImage(kind ImageKind, data []byte) ([]byte, error) {
	if s.store == nil {
		return nil, fmt.Errorf("users: no media store")
	}
	if len(data) > s.maxImage {
		return nil, s.tooLarge(kind)
	}
	bad := app.Validation{kind.Name: "must be a JPEG, PNG, GIF or WebP image"}.Err()
	if len(data) == 0 || !imageTypes[http.DetectContentType(data)] {
		return nil, bad
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil || cfg.Width < 1 || cfg.Height < 1 {
		return nil, bad
	}
	if cfg.Width*cfg.Height > maxImagePixels {
		return nil, app.Validation{kind.Name: "has too many pixels (at most 40 megapixels)"}.Err()
	}
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, bad
	}
	out, err := reencode(src, kind)
	if err != nil {
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

// reencode crops src to kind's aspect around its centre, scales it down
// (never up) to fit and encodes it as a JPEG on white (JPEG has no alpha).
func reencode(src image.Image, kind ImageKind) ([]byte, error) {
	b := src.Bounds()
	w, h := b.Dx(), b.Dy()
	// The largest centred rectangle of the kind's aspect.
	cw, ch := w, w*kind.Height/kind.Width
	if ch > h {
		cw, ch = h*kind.Width/kind.Height, h
	}
	cw, ch = max(cw, 1), max(ch, 1)
	crop := image.Rect(b.Min.X+(w-cw)/2, b.Min.Y+(h-ch)/2, b.Min.X+(w-cw)/2+cw, b.Min.Y+(h-ch)/2+ch)
	tw, th := kind.Width, kind.Height
	if cw < tw {
		tw, th = cw, ch
	}
	dst := image.NewRGBA(image.Rect(0, 0, tw, th))
	draw.Draw(dst, dst.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	draw.CatmullRom.Scale(dst, dst.Bounds(), src, crop, draw.Over, nil)
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, dst, &jpeg.Options{Quality: 85}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
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
