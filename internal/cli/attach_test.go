package cli

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swarmrt/swarm/store"
)

const attachFile = `version: 1
model: scripted:script.yaml
swarms:
  vision:
    description: Describes a picture
    instructions: Describe the picture.
`

const attachScript = `vision:
  - expect_parts: [{type: image, media_type: image/png, min_bytes: 100000}, {type: file, name: notes.pdf}]
    text: "a chart of sales"
`

// swarm run --attach sends the files to the model (the script asserts
// that both arrived with their bytes), and swarm events prints the
// image's blob reference, not its base64.
func TestRunAttach(t *testing.T) {
	file := writeFile(t, attachFile)
	dir := filepath.Dir(file)
	if err := os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(attachScript), 0o644); err != nil {
		t.Fatal(err)
	}
	img := make([]byte, 200000)
	rand.Read(img)
	img = append([]byte("\x89PNG\r\n\x1a\n"), img...)
	pic, pdf := filepath.Join(dir, "pic.png"), filepath.Join(dir, "notes.pdf")
	os.WriteFile(pic, img, 0o644)
	os.WriteFile(pdf, []byte("%PDF-1.7 small"), 0o644)
	storeURL := "sqlite:" + filepath.Join(dir, "runs.db")

	var out, errOut bytes.Buffer
	code := Main([]string{"--file", file, "--store", storeURL, "run", "-q", "--id", "v1", "--attach", pic, "--attach", pdf, "vision", "what is it?"}, strings.NewReader(""), &out, &errOut)
	if code != 0 || !strings.Contains(out.String(), "a chart of sales") {
		t.Fatalf("run: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	out.Reset()
	if code := Main([]string{"--file", file, "--store", storeURL, "events", "v1"}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("events: exit %d, %s", code, errOut.String())
	}
	if strings.Contains(out.String(), base64.StdEncoding.EncodeToString(img[:30])) || strings.Contains(out.String(), base64.StdEncoding.EncodeToString([]byte("%PDF-1.7"))) {
		t.Error("swarm events prints a part's bytes")
	}
	// Following the run prints the same references.
	var followed bytes.Buffer
	if code := Main([]string{"--file", file, "--store", storeURL, "events", "-f", "v1"}, strings.NewReader(""), &followed, &errOut); code != 0 {
		t.Fatalf("events -f: exit %d, %s", code, errOut.String())
	}
	if followed.String() != out.String() {
		t.Errorf("swarm events -f prints\n%s\nwhere swarm events prints\n%s", followed.String(), out.String())
	}
	var started struct {
		Parts []struct {
			Type, Blob, Name string
			Size             int64
		}
	}
	line, _, _ := strings.Cut(out.String(), "\n")
	if err := json.Unmarshal([]byte(line), &started); err != nil || len(started.Parts) != 2 {
		t.Fatalf("started event %s: %v", line, err)
	}
	if p := started.Parts[0]; p.Type != "image" || len(p.Blob) != 64 || p.Size != int64(len(img)) {
		t.Errorf("image part printed as %+v, want its blob reference and size", p)
	}
	if p := started.Parts[1]; p.Type != "file" || p.Name != "notes.pdf" || p.Size != 14 {
		t.Errorf("pdf part printed as %+v, want its name and size", p)
	}

	// A missing file is a usage error naming it, and starts nothing.
	errOut.Reset()
	code = Main([]string{"--file", file, "--store", storeURL, "run", "--attach", filepath.Join(dir, "nope.png"), "vision", "x"}, strings.NewReader(""), &out, &errOut)
	if code != ExitUsage || !strings.Contains(errOut.String(), "nope.png") {
		t.Errorf("missing attachment: exit %d, stderr %q", code, errOut.String())
	}
}

const chatAttachFile = `version: 1
model: scripted:script.yaml
agents:
  viewer:
    instructions: Describe pictures.
conversations:
  look:
    queen: viewer
`

const chatAttachScript = `viewer:
  - text: Hello.
  - expect_parts: [{type: image, media_type: image/png, min_bytes: 10000}]
    text: a chart of sales
  - expect_parts: [{type: file, name: notes.pdf}]
    text: the notes say hello
`

// In swarm chat, /attach FILE sends the file with the next message: the
// model answering that message gets it (the script asserts it); a missing
// file is reported and the session goes on.
func TestChatAttach(t *testing.T) {
	file, dir, pic := promptAttachDir(t, chatAttachFile, chatAttachScript)
	storeURL := "sqlite:" + filepath.Join(dir, "runs.db")
	in := "hi\n/attach " + filepath.Join(dir, "nope.png") + "\n/attach " + pic + "\nwhat is in it?\n/quit\n"
	var out, errOut bytes.Buffer
	code := Main([]string{"--file", file, "--store", storeURL, "chat", "look", "--id", "c1"}, strings.NewReader(in), &out, &errOut)
	if code != 0 || out.String() != "viewer: Hello.\nviewer: a chart of sales\n" {
		t.Fatalf("chat: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	if !strings.Contains(errOut.String(), "nope.png") || !strings.Contains(errOut.String(), "attached "+pic) {
		t.Errorf("stderr %q, want the missing file reported and the picture attached", errOut.String())
	}
	// swarm resume --attach sends a message with a file.
	pdf := filepath.Join(dir, "notes.pdf")
	os.WriteFile(pdf, []byte("%PDF-1.7 small"), 0o644)
	out.Reset()
	errOut.Reset()
	Main([]string{"--file", file, "--store", storeURL, "resume", "-q", "--attach", pdf, "c1", "and these notes?"}, strings.NewReader(""), &out, &errOut)
	out.Reset()
	if code := Main([]string{"--file", file, "--store", storeURL, "events", "c1"}, strings.NewReader(""), &out, &errOut); code != 0 || !strings.Contains(out.String(), "the notes say hello") {
		t.Errorf("events after resume --attach: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}

const teamAttachFile = `version: 1
model: scripted:script.yaml
agents:
  lead:
    instructions: Lead.
teams:
  crew:
    lead: lead
`

const teamAttachScript = `lead:
  - expect_parts: [{type: image, media_type: image/png, min_bytes: 10000}]
    text: a chart of sales
`

// In swarm team, /attach FILE sends the file with the next message to
// the lead.
func TestTeamAttach(t *testing.T) {
	file, dir, pic := promptAttachDir(t, teamAttachFile, teamAttachScript)
	var out, errOut bytes.Buffer
	code := Main([]string{"--file", file, "--store", "sqlite:" + filepath.Join(dir, "runs.db"), "team", "crew", "--id", "t1"},
		strings.NewReader("/attach "+pic+"\nwhat is in it?\n/quit\n"), &out, &errOut)
	if code != 0 || out.String() != "lead: a chart of sales\n" {
		t.Fatalf("team: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}

// promptAttachDir writes a definitions file and its script to a temporary
// directory, with pic.png, a 20 kB PNG, beside them.
func promptAttachDir(t *testing.T, defs, script string) (file, dir, pic string) {
	t.Helper()
	file = writeFile(t, defs)
	dir = filepath.Dir(file)
	if err := os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	img := make([]byte, 20000)
	rand.Read(img)
	pic = filepath.Join(dir, "pic.png")
	if err := os.WriteFile(pic, append([]byte("\x89PNG\r\n\x1a\n"), img...), 0o644); err != nil {
		t.Fatal(err)
	}
	return file, dir, pic
}

// An attachment of exactly store.MaxBlobBytes is read as a part; one byte
// more is refused by swarm run before the run starts.
func TestAttachSizeLimit(t *testing.T) {
	file := writeFile(t, attachFile)
	dir := filepath.Dir(file)
	if err := os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(attachScript), 0o644); err != nil {
		t.Fatal(err)
	}
	sized := func(name string, n int64) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(n); err != nil { // sparse: nothing is written
			t.Fatal(err)
		}
		return p
	}
	exact, over := sized("exact.bin", store.MaxBlobBytes), sized("over.bin", store.MaxBlobBytes+1)
	parts, err := attachments([]string{exact})
	if err != nil || len(parts) != 1 || parts[0].Len() != store.MaxBlobBytes {
		t.Fatalf("an attachment of exactly MaxBlobBytes: %d parts, %v", len(parts), err)
	}
	var out, errOut bytes.Buffer
	code := Main([]string{"--file", file, "--store", "sqlite:" + filepath.Join(dir, "runs.db"), "run", "-q", "--attach", over, "vision", "x"}, strings.NewReader(""), &out, &errOut)
	if code == 0 || !strings.Contains(errOut.String(), "over the limit") {
		t.Errorf("an attachment one byte over MaxBlobBytes: exit %d, stderr %q", code, errOut.String())
	}
}
