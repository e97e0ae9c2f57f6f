package users

import (
	"fmt"
	"io"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
)

// updateMe is PUT /v1/users/me (an extension beyond v1; the caller's own
// id works too, anyone else's is 403): the caller's
// profile. JSON, form or multipart; a multipart body may carry the files
// avatar and cover. Only the fields sent change. It answers the user.
func (h *handlers) updateMe(c *fiber.Ctx) error {
	p := app.CurrentPrincipal(c)
	id, err := UserIDParam(c, "id")
	if err != nil {
		return err
	}
	if id != p.UserID {
		return app.Forbidden("you may only change your own profile; staff edit users in the console")
	}
	body, err := app.ReadInput(c)
	if err != nil {
		return err
	}
	var in ProfileInput
	for _, f := range []struct {
		name string
		dst  **string
	}{{"name", &in.Name}, {"description", &in.Description}, {"location", &in.Location}, {"website", &in.Website}} {
		s, ok, err := body.String(f.name)
		if err != nil {
			return err
		}
		if ok {
			*f.dst = &s
		}
	}
	tags, ok, err := body.Strings("tags")
	if err != nil {
		return err
	}
	if ok {
		if tags == nil {
			tags = []string{}
		}
		in.Tags = &tags
	}
	if _, err := h.svc.SaveProfile(c, p.UserID, in); err != nil {
		return err
	}
	return h.answerFresh(c, p.UserID)
}

// SaveProfile checks the profile fields, stores the images of a multipart
// request (files avatar and cover; an empty file input is no change), then
// saves the fields. Nothing is saved when a field or an image is refused.
func (s *Service) SaveProfile(c *fiber.Ctx, id int64, in ProfileInput) (*User, error) {
	check := in
	if _, err := check.validate(); err != nil {
		return nil, err
	}
	uploads, err := s.readUploads(c)
	if err != nil {
		return nil, err
	}
	for _, kind := range []ImageKind{Avatar, Cover} {
		if data, ok := uploads[kind]; ok {
			if _, err := s.SetImage(c.UserContext(), id, kind, data); err != nil {
				return nil, err
			}
		}
	}
	return s.UpdateProfile(c.UserContext(), id, in)
}

// readUploads reads the image files of a multipart request (ReadUpload).
func (s *Service) readUploads(c *fiber.Ctx) (map[ImageKind][]byte, error) {
	out := map[ImageKind][]byte{}
	for _, kind := range []ImageKind{Avatar, Cover} {
		data, err := s.ReadUpload(c, kind)
		if err != nil {
			return nil, err
		}
		if data != nil {
			out[kind] = data
		}
	}
	return out, nil
}

// ReadUpload reads the file kind.Name of a multipart request: nil when
// the request is not multipart or has no such file (or an empty file
// input), a 413 beyond SettingImageMaxBytes before it is read. The shows
// module reads a show's image with it.
func (s *Service) ReadUpload(c *fiber.Ctx, kind ImageKind) ([]byte, error) {
	if !isMultipart(c) {
		return nil, nil
	}
	mf, err := c.MultipartForm()
	if err != nil {
		return nil, app.BadRequest("malformed multipart body")
	}
	files := mf.File[kind.Name]
	if len(files) == 0 {
		return nil, nil
	}
	fh := files[0]
	if fh.Size == 0 && fh.Filename == "" {
		return nil, nil // a file input left empty
	}
	if fh.Size > int64(s.maxImage) {
		return nil, s.tooLarge(kind)
	}
	f, err := fh.Open()
	if err != nil {
		return nil, fmt.Errorf("users: open upload: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(s.maxImage)+1))
	if err != nil {
		return nil, fmt.Errorf("users: read upload: %w", err)
	}
	return data, nil
}

func isMultipart(c *fiber.Ctx) bool {
	return len(c.Request().Header.MultipartFormBoundary()) > 0
}

func (s *Service) tooLarge(kind ImageKind) error {
	return &app.Error{Status: fiber.StatusRequestEntityTooLarge, Code: "body_too_large",
		Message: fmt.Sprintf("the %s is larger than %d KB", kind.Name, s.maxImage>>10),
		Fields:  map[string]string{kind.Name: fmt.Sprintf("must be at most %d KB", s.maxImage>>10)}}
}
