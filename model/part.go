package model

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // image sizes for Tokens
	_ "image/jpeg"
	_ "image/png"
	"mime"
	"net/http"
	"path"
	"strings"
)

// PartType is the kind of a [Part].
type PartType string

// The kinds of part.
const (
	PartText  PartType = "text"
	PartImage PartType = "image"
	PartFile  PartType = "file"
	PartAudio PartType = "audio"
)

// Part is a piece of a message that is not its plain text: an image, a file
// (a PDF, a text document, ...), audio, or a text piece placed among them.
// Messages carry parts in [Message.Parts], after their Content.
//
// A part other than text has exactly one source: Data (the bytes, with
// their MediaType), URL (the model fetches it), or Blob (the SHA-256 of
// bytes kept in a store's blob table beside the journal). Before a model
// sees a blob part the runtime loads its bytes into Data and keeps Blob,
// which then names the bytes (providers may cache their encoding by it).
//
// In JSON, Data is base64, as encoding/json writes a []byte; a message
// without parts is encoded as it was before parts existed.
type Part struct {
	Type PartType `json:"type"`
	// Text is the text of a text part.
	Text string `json:"text,omitempty"`
	// MediaType is the IANA media type of the bytes, such as "image/png",
	// "application/pdf" or "audio/wav". Required with Data and Blob.
	MediaType string `json:"media_type,omitempty"`
	// Name is a file's name, such as "report.pdf".
	Name string `json:"name,omitempty"`
	// Data holds the bytes.
	Data []byte `json:"data,omitempty"`
	// URL is where the bytes are (http, https or a data: URL).
	URL string `json:"url,omitempty"`
	// Blob is the hex SHA-256 of the bytes when they are kept in a blob
	// store instead of Data.
	Blob string `json:"blob,omitempty"`
	// Size is the number of bytes, kept with a Blob (informative).
	Size int64 `json:"size,omitempty"`
}

// String describes the part without its bytes, such as
// "image image/png 2048 bytes" or "file report.pdf application/pdf blob
// 3f2a…": a message with a large image stays readable in logs.
func (p Part) String() string {
	if p.Type == PartText {
		return fmt.Sprintf("text %q", p.Text)
	}
	s := string(p.Type)
	if p.Name != "" {
		s += " " + p.Name
	}
	if p.MediaType != "" {
		s += " " + p.MediaType
	}
	switch {
	case p.Blob != "":
		s += fmt.Sprintf(" blob %.12s (%d bytes)", p.Blob, p.Size)
	case p.URL != "":
		s += fmt.Sprintf(" url %.60s", p.URL)
	default:
		s += fmt.Sprintf(" %d bytes", len(p.Data))
	}
	return s
}

// TextPart returns a text part.
func TextPart(s string) Part { return Part{Type: PartText, Text: s} }

// Image returns an image part holding data of the given media type
// ("image/png", "image/jpeg", "image/gif" or "image/webp").
func Image(mediaType string, data []byte) Part {
	return Part{Type: PartImage, MediaType: mediaType, Data: data}
}

// ImageURL returns an image part the model fetches from url.
func ImageURL(url string) Part { return Part{Type: PartImage, URL: url} }

// File returns a file part named name holding data of the given media type
// (such as "application/pdf").
func File(name, mediaType string, data []byte) Part {
	return Part{Type: PartFile, Name: name, MediaType: mediaType, Data: data}
}

// Audio returns an audio part holding data of the given media type (such as
// "audio/wav" or "audio/mpeg").
func Audio(mediaType string, data []byte) Part {
	return Part{Type: PartAudio, MediaType: mediaType, Data: data}
}

// Attachment returns the part for a file named name holding data: an
// image for image/* media, audio for audio/*, a file (keeping its name)
// otherwise. An empty mediaType is found from the name's extension, else
// from the bytes (as net/http sniffs them).
func Attachment(name, mediaType string, data []byte) Part {
	if mediaType == "" {
		mediaType = mime.TypeByExtension(strings.ToLower(path.Ext(name)))
	}
	if mediaType == "" {
		mediaType = http.DetectContentType(data)
	}
	mt, _, err := mime.ParseMediaType(mediaType)
	if err != nil {
		mt = mediaType
	}
	switch {
	case strings.HasPrefix(mt, "image/"):
		return Part{Type: PartImage, MediaType: mt, Data: data}
	case strings.HasPrefix(mt, "audio/"):
		return Part{Type: PartAudio, MediaType: mt, Data: data}
	}
	return Part{Type: PartFile, Name: path.Base(name), MediaType: mt, Data: data}
}

// Len returns the number of bytes of the part's content: its text, its
// data, or the Size of its blob.
func (p *Part) Len() int64 {
	switch {
	case p.Type == PartText:
		return int64(len(p.Text))
	case len(p.Data) == 0 && p.Blob != "":
		return p.Size
	}
	return int64(len(p.Data))
}

// Tokens estimates the tokens a part takes in a model's context window,
// for compaction and budgets; no provider counts exactly this way. Text:
// a quarter of its bytes. An image: Anthropic's rule, width × height / 750
// for an image whose size its header gives (PNG, JPEG, GIF), at most
// 1,600 (the size of an image providers scale down), and 1,600 when the
// size is unknown (a URL, a blob not loaded). Audio: 1,600. Another file:
// a text file a quarter of its bytes, a PDF or other document 1,500 per
// 64 KiB begun (about a page).
func (p *Part) Tokens() int {
	const maxImage = 1600
	switch p.Type {
	case PartText:
		return (len(p.Text) + 3) / 4
	case PartImage:
		if len(p.Data) > 0 {
			if cfg, _, err := image.DecodeConfig(bytes.NewReader(p.Data)); err == nil && cfg.Width > 0 && cfg.Height > 0 {
				return min(maxImage, max(1, cfg.Width*cfg.Height/750))
			}
		}
		return maxImage
	case PartFile:
		n := p.Len()
		if strings.HasPrefix(p.MediaType, "text/") {
			return int((n + 3) / 4)
		}
		return int(1500 * ((n + 64<<10 - 1) / (64 << 10)))
	}
	return maxImage
}

// Validate reports why p is malformed: an unknown type, a text part with
// bytes, a part other than text with no source or more than one, bytes
// without a media type or with one that does not fit the type (an image
// needs image/*, audio audio/*), a URL that is not http, https or data, a
// blob that is not a hex SHA-256.
func (p *Part) Validate() error {
	switch p.Type {
	case PartText:
		if len(p.Data) > 0 || p.URL != "" || p.Blob != "" {
			return errors.New("text part: holds bytes, a url or a blob; a text part holds only text")
		}
		return nil
	case PartImage, PartFile, PartAudio:
	case "":
		return errors.New("part without a type (want text, image, file or audio)")
	default:
		return fmt.Errorf("unknown part type %q (want text, image, file or audio)", p.Type)
	}
	sources := 0
	for _, set := range []bool{len(p.Data) > 0 || p.Blob != "", p.URL != ""} {
		if set {
			sources++
		}
	}
	if sources != 1 {
		return fmt.Errorf("%s part: want one source, data (or a blob) or a url, got %d", p.Type, sources)
	}
	if p.Text != "" {
		return fmt.Errorf("%s part: has text; put text in a text part", p.Type)
	}
	if p.URL != "" {
		scheme, _, _ := strings.Cut(p.URL, ":")
		switch strings.ToLower(scheme) {
		case "http", "https", "data":
		default:
			return fmt.Errorf("%s part: url scheme %q not supported (want http, https or data)", p.Type, scheme)
		}
		return nil
	}
	if p.Blob != "" && !IsBlobHash(p.Blob) {
		return fmt.Errorf("%s part: blob %q is not a hex SHA-256", p.Type, p.Blob)
	}
	if p.MediaType == "" {
		return fmt.Errorf("%s part: no media type", p.Type)
	}
	mt, _, err := mime.ParseMediaType(p.MediaType)
	if err != nil {
		return fmt.Errorf("%s part: media type %q: %w", p.Type, p.MediaType, err)
	}
	if want := map[PartType]string{PartImage: "image/", PartAudio: "audio/"}[p.Type]; want != "" && !strings.HasPrefix(mt, want) {
		return fmt.Errorf("%s part: media type %q is not %s*", p.Type, p.MediaType, want)
	}
	return nil
}

// IsBlobHash reports whether s is a lowercase hex SHA-256, the form of
// [Part.Blob].
func IsBlobHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// DataURL returns the part's bytes as a data: URL
// ("data:image/png;base64,..."), or its URL when it has no bytes.
func (p *Part) DataURL() string {
	if len(p.Data) == 0 {
		return p.URL
	}
	return "data:" + p.MediaType + ";base64," + base64.StdEncoding.EncodeToString(p.Data)
}

// Base64 returns the part's bytes in standard base64.
func (p *Part) Base64() string { return base64.StdEncoding.EncodeToString(p.Data) }

// ErrUnsupportedPart is wrapped by the error a provider returns when a
// model cannot take a part: its type, its media type or its source. The
// error is a [*Error] of kind [KindBadRequest] naming the message and part.
var ErrUnsupportedPart = errors.New("unsupported part")

// Unsupported returns the error a provider gives when message msg of a
// request holds part number part that the model cannot take, because of
// why.
func Unsupported(provider, modelName string, msg, part int, p *Part, why string) *Error {
	return &Error{Kind: KindBadRequest, Provider: provider, Model: modelName,
		Message: fmt.Sprintf("message %d part %d (%s %s): %s", msg, part, p.Type, p.MediaType, why), Err: ErrUnsupportedPart}
}

// CheckParts validates every part of msgs and that no part still refers to
// a blob (the runtime resolves blobs before calling a model); providers call
// it first. The error is a [*Error] of kind [KindBadRequest] wrapping
// [ErrUnsupportedPart].
func CheckParts(provider, modelName string, msgs []Message) error {
	for i := range msgs {
		for j := range msgs[i].Parts {
			p := &msgs[i].Parts[j]
			if err := p.Validate(); err != nil {
				return Unsupported(provider, modelName, i, j, p, err.Error())
			}
			if p.Blob != "" && len(p.Data) == 0 {
				return Unsupported(provider, modelName, i, j, p, "blob "+p.Blob+" was not loaded from the store")
			}
		}
	}
	return nil
}
