package modeltest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/swarmrt/swarm/model"
)

// This file decodes the multimodal content of requests, as each vendor
// documents it, into vendor-neutral parts: text goes to the message's
// Content, images, files and audio to its Parts (with the bytes decoded).
// A content item the vendor does not document in that place is an error,
// as the real API would answer 400.

// contentItem is one item of a content list, in any of the three formats.
type contentItem struct {
	Type string `json:"type"`
	Text string `json:"text"`
	// Chat Completions.
	ImageURL   json.RawMessage `json:"image_url"` // {"url"} (chat) or a string (responses)
	File       *chatFile       `json:"file"`
	InputAudio *struct {
		Data   string `json:"data"`
		Format string `json:"format"`
	} `json:"input_audio"`
	// Responses.
	Filename string `json:"filename"`
	FileData string `json:"file_data"`
	FileURL  string `json:"file_url"`
	// Anthropic.
	Source *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	} `json:"source"`
	Title string `json:"title"`
}

type chatFile struct {
	Filename string `json:"filename"`
	FileData string `json:"file_data"`
	FileID   string `json:"file_id"`
}

// decodeDataURL decodes "data:MEDIA;base64,DATA".
func decodeDataURL(s string) (model.Part, error) {
	rest, ok := strings.CutPrefix(s, "data:")
	meta, enc, found := strings.Cut(rest, ",")
	if !ok || !found || !strings.HasSuffix(meta, ";base64") {
		return model.Part{}, fmt.Errorf("not a base64 data URL: %.40q", s)
	}
	data, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return model.Part{}, fmt.Errorf("data URL: invalid base64: %w", err)
	}
	return model.Part{MediaType: strings.TrimSuffix(meta, ";base64"), Data: data}, nil
}

// urlPart is an image or file given by a URL: decoded if a data URL.
func urlPart(typ model.PartType, url string) (model.Part, error) {
	if url == "" {
		return model.Part{}, fmt.Errorf("%s: empty url", typ)
	}
	if strings.HasPrefix(url, "data:") {
		p, err := decodeDataURL(url)
		p.Type = typ
		return p, err
	}
	return model.Part{Type: typ, URL: url}, nil
}

// readContent reads a content that is a string or a list of items, each
// decoded by item into text (appended to the text) or a part.
func readContent(raw json.RawMessage, item func(*contentItem) (string, *model.Part, error)) (string, []model.Part, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil, nil
	}
	var items []contentItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return "", nil, fmt.Errorf("content is neither a string nor a list of parts: %w", err)
	}
	var parts []model.Part
	for i := range items {
		text, p, err := item(&items[i])
		if err != nil {
			return "", nil, fmt.Errorf("content[%d]: %w", i, err)
		}
		s += text
		if p != nil {
			parts = append(parts, *p)
		}
	}
	return s, parts, nil
}

// chatItem decodes a Chat Completions content part; media says whether the
// message may hold more than text (a user message may; a tool message
// takes only text parts).
func chatItem(media bool) func(*contentItem) (string, *model.Part, error) {
	return func(it *contentItem) (string, *model.Part, error) {
		if it.Type != "text" && !media {
			return "", nil, fmt.Errorf("part type %q not allowed here (only text)", it.Type)
		}
		switch it.Type {
		case "text":
			return it.Text, nil, nil
		case "image_url":
			var u struct {
				URL    string `json:"url"`
				Detail string `json:"detail"`
			}
			if err := json.Unmarshal(it.ImageURL, &u); err != nil {
				return "", nil, fmt.Errorf("image_url: want an object with url: %w", err)
			}
			p, err := urlPart(model.PartImage, u.URL)
			return "", &p, err
		case "file":
			if it.File == nil || (it.File.FileData == "") == (it.File.FileID == "") {
				return "", nil, fmt.Errorf("file: want exactly one of file_data or file_id")
			}
			if it.File.FileID != "" {
				return "", &model.Part{Type: model.PartFile, URL: "file-id:" + it.File.FileID, Name: it.File.Filename}, nil
			}
			if it.File.Filename == "" {
				return "", nil, fmt.Errorf("file: file_data without filename")
			}
			p, err := decodeDataURL(it.File.FileData)
			p.Type, p.Name = model.PartFile, it.File.Filename
			return "", &p, err
		case "input_audio":
			a := it.InputAudio
			if a == nil {
				return "", nil, fmt.Errorf("input_audio: missing")
			}
			mt := map[string]string{"wav": "audio/wav", "mp3": "audio/mpeg"}[a.Format]
			if mt == "" {
				return "", nil, fmt.Errorf("input_audio: format %q (want wav or mp3)", a.Format)
			}
			data, err := base64.StdEncoding.DecodeString(a.Data)
			if err != nil {
				return "", nil, fmt.Errorf("input_audio: invalid base64: %w", err)
			}
			return "", &model.Part{Type: model.PartAudio, MediaType: mt, Data: data}, nil
		}
		return "", nil, fmt.Errorf("unknown part type %q", it.Type)
	}
}

// responsesItem decodes a Responses input content item or function call
// output item: input_text, input_image, input_file.
func responsesItem(it *contentItem) (string, *model.Part, error) {
	switch it.Type {
	case "input_text", "output_text":
		return it.Text, nil, nil
	case "input_image":
		var url string
		if err := json.Unmarshal(it.ImageURL, &url); err != nil {
			return "", nil, fmt.Errorf("input_image: image_url is not a string: %w", err)
		}
		p, err := urlPart(model.PartImage, url)
		return "", &p, err
	case "input_file":
		if (it.FileData == "") == (it.FileURL == "") {
			return "", nil, fmt.Errorf("input_file: want exactly one of file_data or file_url")
		}
		if it.FileData != "" {
			if it.Filename == "" {
				return "", nil, fmt.Errorf("input_file: file_data without filename")
			}
			p, err := decodeDataURL(it.FileData)
			p.Type, p.Name = model.PartFile, it.Filename
			return "", &p, err
		}
		return "", &model.Part{Type: model.PartFile, URL: it.FileURL, Name: it.Filename}, nil
	}
	return "", nil, fmt.Errorf("unknown content type %q", it.Type)
}

// anthropicMedia decodes an Anthropic image or document block.
func anthropicMedia(b *anthropicBlock) (*model.Part, error) {
	var it contentItem
	if err := json.Unmarshal(b.raw, &it); err != nil {
		return nil, err
	}
	src := it.Source
	if src == nil {
		return nil, fmt.Errorf("%s: missing source", b.Type)
	}
	p := &model.Part{Type: model.PartImage, Name: it.Title}
	if b.Type == "document" {
		p.Type = model.PartFile
	}
	switch src.Type {
	case "url":
		if src.URL == "" {
			return nil, fmt.Errorf("%s: url source without url", b.Type)
		}
		p.URL = src.URL
		return p, nil
	case "base64":
		allowed := []string{"image/jpeg", "image/png", "image/gif", "image/webp"}
		if b.Type == "document" {
			allowed = []string{"application/pdf"}
		}
		if !slices.Contains(allowed, src.MediaType) {
			return nil, fmt.Errorf("%s: media_type %q not supported (want one of %s)", b.Type, src.MediaType, strings.Join(allowed, ", "))
		}
		data, err := base64.StdEncoding.DecodeString(src.Data)
		if err != nil {
			return nil, fmt.Errorf("%s: invalid base64: %w", b.Type, err)
		}
		p.MediaType, p.Data = src.MediaType, data
		return p, nil
	case "text":
		if b.Type != "document" || src.MediaType != "text/plain" {
			return nil, fmt.Errorf("%s: a text source is a document's, with media_type text/plain", b.Type)
		}
		p.MediaType, p.Data = "text/plain", []byte(src.Data)
		return p, nil
	}
	return nil, fmt.Errorf("%s: unknown source type %q", b.Type, src.Type)
}

// anthropicToolResult decodes a tool_result's content: a string or a list
// of text, image and document blocks.
func anthropicToolResult(raw json.RawMessage) (string, []model.Part, error) {
	if len(raw) == 0 {
		return "", nil, nil
	}
	bs, err := blocks(raw)
	if err != nil {
		return "", nil, err
	}
	var text string
	var parts []model.Part
	for i := range bs {
		switch bs[i].Type {
		case "text":
			text += bs[i].Text
		case "image", "document":
			p, err := anthropicMedia(&bs[i])
			if err != nil {
				return "", nil, err
			}
			parts = append(parts, *p)
		default:
			return "", nil, fmt.Errorf("block %q not allowed in a tool_result", bs[i].Type)
		}
	}
	return text, parts, nil
}
