package config

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/swarmrt/swarm"
)

const (
	// defaultTimeout bounds a command tool that sets no timeout.
	defaultTimeout = 30 * time.Second
	// maxOutput caps the standard output kept as a tool's result.
	maxOutput = 1 << 20
	// stderrTail is how much of the end of standard error an error shows.
	stderrTail = 2 << 10
	// waitDelay bounds the wait for a command's pipes to close once it has
	// exited or been killed (a process it left behind may hold them open).
	waitDelay = 2 * time.Second
)

var (
	defaultSchema   = json.RawMessage(`{"type":"object"}`)
	defaultResolved = func() *jsonschema.Resolved {
		rs, err := resolveSchema(defaultSchema)
		if err != nil {
			panic(err) // a constant schema
		}
		return rs
	}()
)

// errTimedOut is the cancellation cause of a call that ran out of time.
var errTimedOut = errors.New("command timed out")

// commandTool is a swarm.Tool that runs a program (see the package
// documentation).
type commandTool struct {
	name, description string
	argv              []string // as configured
	path              string   // resolved program path
	dir               string
	env               []string // NAME=value
	timeout           time.Duration
	schema            json.RawMessage
	resolved          *jsonschema.Resolved
}

var _ swarm.Tool = (*commandTool)(nil)

// Name returns the tool's name.
func (t *commandTool) Name() string { return t.name }

// Description returns the tool's description.
func (t *commandTool) Description() string { return t.description }

// Schema returns the JSON schema of the tool's arguments.
func (t *commandTool) Schema() json.RawMessage { return t.schema }

// Call validates args and runs the command with them on its standard input.
func (t *commandTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return "", &swarm.ArgumentError{Tool: t.name, Err: fmt.Errorf("not valid JSON: %w", err)}
	}
	if err := t.resolved.Validate(v); err != nil {
		return "", &swarm.ArgumentError{Tool: t.name, Err: err}
	}
	if ctx.Err() != nil {
		return "", fmt.Errorf("command %q not started: %w", t.argv[0], context.Cause(ctx))
	}

	cctx, cancel := context.WithTimeoutCause(ctx, t.timeout, errTimedOut)
	defer cancel()
	cmd := exec.CommandContext(cctx, t.path, t.argv[1:]...)
	cmd.Args[0] = t.argv[0]
	cmd.Dir = t.dir
	cmd.Env = t.environ(ctx)
	// The input is a file written whole before the command starts: piped
	// by this process, a command would read a cut input (and act on it)
	// if this process died while writing.
	in, err := inputFile(args)
	if err != nil {
		return "", fmt.Errorf("command %q: %w", t.argv[0], err)
	}
	defer func() {
		in.Close()
		_ = os.Remove(in.Name()) // where it could not be removed open
	}()
	cmd.Stdin = in
	stdout, stderr := &capBuffer{max: maxOutput}, &tailBuffer{max: stderrTail}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = waitDelay
	setProcessGroup(cmd)

	err = cmd.Run()
	if err != nil && cctx.Err() != nil {
		if ctx.Err() == nil && errors.Is(context.Cause(cctx), errTimedOut) {
			return "", &msgError{
				msg: fmt.Sprintf("command %q timed out after %s%s", t.argv[0], t.timeout, details(stderr, stdout)),
				err: context.DeadlineExceeded,
			}
		}
		return "", fmt.Errorf("command %q cancelled: %w", t.argv[0], context.Cause(ctx))
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.Is(err, exec.ErrWaitDelay):
		// The command succeeded but a process it left behind kept its
		// output open; what it wrote until then is the result.
	case errors.As(err, &ee):
		var msg string
		if code := ee.ExitCode(); code >= 0 {
			msg = fmt.Sprintf("command %q exited with status %d", t.argv[0], code)
		} else {
			msg = fmt.Sprintf("command %q failed: %s", t.argv[0], ee)
		}
		return "", &msgError{msg: msg + details(stderr, stdout), err: err}
	default:
		return "", fmt.Errorf("command %q: %w", t.argv[0], err)
	}
	out := strings.TrimSuffix(stdout.buf.String(), "\n")
	out = strings.TrimSuffix(out, "\r")
	if stdout.truncated {
		out += fmt.Sprintf("\n[output truncated: the command wrote more than %d bytes]", maxOutput)
	}
	return out, nil
}

// inputFile returns a file holding data, read from its start, and already
// removed where the system allows it (so that nothing is left behind if
// this process dies).
func inputFile(data []byte) (*os.File, error) {
	f, err := os.CreateTemp("", "swarm-input-*")
	if err != nil {
		return nil, fmt.Errorf("input file: %w", err)
	}
	_ = os.Remove(f.Name()) // fails on Windows while the file is open
	if _, err = f.Write(data); err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("input file: %w", err)
	}
	return f, nil
}

// environ is the command's environment: the process's, the tool's, and the
// call's identity.
func (t *commandTool) environ(ctx context.Context) []string {
	env := os.Environ()
	env = append(env[:len(env):len(env)], t.env...)
	return append(env,
		"SWARM_RUN_ID="+swarm.RunID(ctx),
		"SWARM_STEP_KEY="+swarm.StepKey(ctx),
		"SWARM_IDEMPOTENCY_KEY="+swarm.IdempotencyKey(ctx),
		"SWARM_TOOL="+t.name,
	)
}

// details returns "; stderr: ..." with the end of standard error, or of
// standard output when nothing was written to standard error.
func details(stderr *tailBuffer, stdout *capBuffer) string {
	if s := strings.TrimSpace(stderr.String()); s != "" {
		return "; stderr: " + s
	}
	b := stdout.buf.Bytes()
	if len(b) > stderrTail {
		b = b[len(b)-stderrTail:]
	}
	if s := strings.TrimSpace(string(cutRune(b))); s != "" {
		return "; output: " + s
	}
	return ""
}

// msgError is an error with a message of its own around a cause.
type msgError struct {
	msg string
	err error
}

func (e *msgError) Error() string { return e.msg }
func (e *msgError) Unwrap() error { return e.err }

// capBuffer keeps the first max bytes written to it and discards the rest
// (so that the command is never blocked on a full pipe).
type capBuffer struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (b *capBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room < len(p) {
		b.buf.Write(p[:max(room, 0)])
		b.truncated = true
		return len(p), nil
	}
	return b.buf.Write(p)
}

// tailBuffer keeps (at least) the last max bytes written to it.
type tailBuffer struct {
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*b.max {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

// String returns the last max bytes, starting at a character boundary.
func (b *tailBuffer) String() string {
	s := b.buf
	if len(s) > b.max {
		s = cutRune(s[len(s)-b.max:])
	}
	return string(s)
}

// cutRune drops the bytes of a character cut at the start of b.
func cutRune(b []byte) []byte {
	for i := 0; i < len(b) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(b[i]) {
			return b[i:]
		}
	}
	return b
}
