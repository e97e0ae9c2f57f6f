package shows

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/users"
)

// The image of a show. The owner may upload one (multipart field "image"
// of POST and PUT /v1/shows and the studio's form); it goes through the
// users module's profile image code (users.Service.EncodeImage: the same
// types, ONAIR_IMAGE_MAX_BYTES, decode budget and errors), cropped and
// scaled to 16:9,
// and is stored through core.Store under shows/{id}/image-{hash}.jpg, next
// to the show's media: the live module serves it at
// /media/shows/{id}/image-{hash}.jpg (signed for a private show, like the
// rest of its media) and drops it with them when the show is deleted.
// image_url is that image when there is one, before any frame grabbed
// from the stream. A new image replaces the old, whose object is deleted.

// ShowImage is the kind (field name and served shape) of a show's image.
var ShowImage = users.ImageKind{Name: "image", Width: 1280, Height: 720}

// imageStore checks, re-encodes, stores and deletes show images through
// the users service's image code. A nil store (no users service) takes
// no upload and stores nothing.
type imageStore struct {
	users *users.Service
	log   *slog.Logger
}

// imageDir is the store folder of a show's image (its media's).
func imageDir(id int64) string { return "shows/" + strconv.FormatInt(id, 10) }

// readImage reads the uploaded image of a multipart POST or PUT.
func (im *imageStore) readImage(c *fiber.Ctx) ([]byte, error) {
	if im == nil {
		return nil, nil
	}
	return im.users.ReadUpload(c, ShowImage)
}

// encodeImage checks and re-encodes in.Image (nil when none was sent).
// A refused image is kept aside as imgErr, for withImage to report with
// the other fields.
func (im *imageStore) encodeImage(ctx context.Context, in *Input) (jpg []byte, imgErr error, err error) {
	if in.Image == nil {
		return nil, nil, nil
	}
	if im == nil {
		return nil, nil, fmt.Errorf("shows: no image service")
	}
	jpg, err = im.users.EncodeImage(ctx, ShowImage, in.Image)
	var apiErr *app.Error
	if errors.As(err, &apiErr) {
		return nil, err, nil
	}
	return jpg, nil, err
}

// withImage reports the field problems and the image's together: one 422
// with every field; an image too large (413) is reported alone.
func withImage(fields, imgErr error) error {
	var f, i *app.Error
	switch {
	case imgErr == nil:
		return fields
	case fields == nil, !errors.As(imgErr, &i), i.Status != http.StatusUnprocessableEntity:
		return imgErr
	case !errors.As(fields, &f) || f.Status != http.StatusUnprocessableEntity:
		return fields
	}
	v := app.Validation{}
	for k, p := range f.Fields {
		v.Add(k, p)
	}
	for k, p := range i.Fields {
		v.Add(k, p)
	}
	return v.Err()
}

// putImage stores a re-encoded image of show id and answers its key.
func (im *imageStore) putImage(ctx context.Context, id int64, jpg []byte) (string, error) {
	return im.users.PutImage(ctx, imageDir(id), ShowImage, jpg)
}

// dropImages deletes stored images but keep (a key written by an attempt
// that did not commit, or an image replaced). A failure is logged: the
// show's change stands.
func (im *imageStore) dropImages(ctx context.Context, keys []string, keep string) {
	if im == nil {
		return
	}
	for _, k := range keys {
		if k == "" || k == keep {
			continue
		}
		if err := im.users.DeleteImage(ctx, k); err != nil {
			im.log.Warn("shows: delete an image", "key", k, "err", err)
		}
	}
}
