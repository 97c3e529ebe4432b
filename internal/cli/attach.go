package cli

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// attachments reads the files of --attach as parts, their kind and media
// type found from their names and bytes. A file over store.MaxBlobBytes is
// refused before it is read whole.
func attachments(paths []string) ([]model.Part, error) {
	parts := make([]model.Part, 0, len(paths))
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("--attach: %w", err)
		}
		data, err := io.ReadAll(io.LimitReader(f, store.MaxBlobBytes+1))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("--attach %s: %w", p, err)
		}
		if len(data) > store.MaxBlobBytes {
			return nil, fmt.Errorf("--attach %s: over the limit of %d bytes", p, store.MaxBlobBytes)
		}
		if len(data) == 0 {
			return nil, fmt.Errorf("--attach %s: the file is empty", p)
		}
		parts = append(parts, model.Attachment(p, "", data))
	}
	return parts, nil
}

// withoutBytes returns ev with the bytes of its inline parts left out
// (their size kept): events print references and sizes, never base64.
// Large parts are blob references already.
func withoutBytes(ev swarm.Event) swarm.Event {
	if len(ev.Parts) == 0 {
		return ev
	}
	parts := slices.Clone(ev.Parts)
	for i := range parts {
		if p := &parts[i]; len(p.Data) > 0 {
			p.Size, p.Data = int64(len(p.Data)), nil
		}
	}
	ev.Parts = parts
	return ev
}
