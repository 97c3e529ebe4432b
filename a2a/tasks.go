package a2a

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// Run values that keep A2A identifiers with a run started over A2A.
const (
	// ValueContextID is the run value holding the task's A2A contextId.
	ValueContextID = "a2a_context_id"
	// ValueMessageID is the run value holding the id of the message that
	// started the task.
	ValueMessageID = "a2a_message_id"
)

// ResultArtifactID is the id of the artifact holding a completed run's
// result.
const ResultArtifactID = "result"

// ResultPartArtifactID is the id of the artifact holding a completed
// run's result part i (0-based; see swarm.Completed.Parts): a file part
// with its bytes (or its URL), its media type and file name. These
// artifacts follow the result artifact.
func ResultPartArtifactID(i int) string { return "part-" + strconv.Itoa(i+1) }

// partArtifacts returns the artifacts of a completed run's result parts,
// with their bytes loaded from the store.
func (h *taskHandler) partArtifacts(ctx context.Context, id string, parts []model.Part) ([]*sdk.Artifact, error) {
	if len(parts) == 0 {
		return nil, nil
	}
	parts, err := h.loadParts(ctx, id, parts)
	if err != nil {
		return nil, internal(err)
	}
	out := make([]*sdk.Artifact, 0, len(parts))
	for i, p := range parts {
		ap := partOf(p, i)
		out = append(out, &sdk.Artifact{ID: sdk.ArtifactID(ResultPartArtifactID(i)), Name: partName(p, i), Parts: sdk.ContentParts{ap}})
	}
	return out, nil
}

// loadParts returns parts with the bytes of their blob references loaded
// from run id's blobs, when the store keeps blobs.
func (h *taskHandler) loadParts(ctx context.Context, id string, parts []model.Part) ([]model.Part, error) {
	b, ok := h.rt.Store().(store.Blobs)
	if !ok || len(parts) == 0 {
		return parts, nil
	}
	msgs, err := store.LoadParts(ctx, b, id, []model.Message{{Parts: parts}}, nil)
	if err != nil {
		return nil, err
	}
	return msgs[0].Parts, nil
}

// partOf returns the A2A part of p, part i of a message or a result, its
// bytes loaded: a text part, or a file part with its bytes (or its URL),
// its media type and its file name (an unnamed one is named by its kind
// and position, such as "image-1").
func partOf(p model.Part, i int) *sdk.Part {
	if p.Type == model.PartText {
		return sdk.NewTextPart(p.Text)
	}
	var ap *sdk.Part
	if p.URL != "" {
		ap = sdk.NewFileURLPart(sdk.URL(p.URL), p.MediaType)
	} else {
		ap = sdk.NewRawPart(p.Data)
		ap.MediaType = p.MediaType
	}
	ap.Filename = partName(p, i)
	return ap
}

// partName is the name of p, part i: its own, or its kind and position
// (such as "image-1").
func partName(p model.Part, i int) string {
	if p.Name != "" {
		return p.Name
	}
	return string(p.Type) + "-" + strconv.Itoa(i+1)
}

// fileParts returns the A2A file parts of a user's message's parts in a
// task's history, their bytes loaded from run id's blobs. A blob the run
// lacks (a crash between its start record and its blobs) leaves a text
// part saying so, so that the task can still be read.
func (h *taskHandler) fileParts(ctx context.Context, id string, parts []model.Part) (sdk.ContentParts, error) {
	var out sdk.ContentParts
	for i, p := range parts {
		loaded, err := h.loadParts(ctx, id, []model.Part{p})
		switch {
		case errors.Is(err, store.ErrNoBlob):
			out = append(out, sdk.NewTextPart(fmt.Sprintf("[%s: its bytes are missing]", p)))
		case err != nil:
			return nil, internal(err)
		default:
			out = append(out, partOf(loaded[0], i))
		}
	}
	return out, nil
}

// userMessage is a user's message of a task's history without its files:
// text, its text as journaled (the input of a run, or the answer to a
// pause) without the lines that stood for its files; none when nothing is
// left of it but files.
func userMessage(id string, text *sdk.Part, files []model.Part) *sdk.Message {
	m := &sdk.Message{ID: id, Role: sdk.MessageRoleUser}
	if s, ok := text.Content.(sdk.Text); ok {
		if s = sdk.Text(userText(string(s), files)); s != "" || len(files) == 0 {
			m.Parts = sdk.ContentParts{sdk.NewTextPart(string(s))}
		}
	} else {
		m.Parts = sdk.ContentParts{text}
	}
	return m
}

// userText returns the text of a user's message without the lines that
// stood for its file parts in it (see messageText): "[N bytes of TYPE]"
// for a file's bytes, the URL for a file's URL. The history carries those
// files as file parts instead.
func userText(text string, parts []model.Part) string {
	if len(parts) == 0 {
		return text
	}
	lines := strings.Split(text, "\n")
	for _, p := range parts {
		if p.Type == model.PartText {
			continue
		}
		bytesLine := fmt.Sprintf("[%d bytes of ", p.Len())
		for j, l := range lines {
			if p.URL != "" && l == p.URL || p.URL == "" && strings.HasPrefix(l, bytesLine) && strings.HasSuffix(l, "]") {
				lines = slices.Delete(lines, j, j+1)
				break
			}
		}
	}
	return strings.Join(lines, "\n")
}

// taskHandler implements the A2A operations of one swarm on the runtime:
// a task is a run.
type taskHandler struct {
	rt    *swarm.Runtime
	agent *agent
}

var _ a2asrv.RequestHandler = (*taskHandler)(nil)

func (h *taskHandler) check(ctx context.Context) error {
	if err := auth.Check(ctx, h.agent.id); err != nil {
		return sdk.NewError(sdk.ErrUnauthorized, err.Error())
	}
	return nil
}

// status returns the run behind task id, which must belong to this swarm.
func (h *taskHandler) status(ctx context.Context, id sdk.TaskID) (swarm.Status, error) {
	if id == "" {
		return swarm.Status{}, sdk.NewError(sdk.ErrInvalidParams, "missing task id")
	}
	st, err := h.rt.Status(ctx, string(id))
	if errors.Is(err, swarm.ErrNotFound) || err == nil && st.Swarm != h.agent.id {
		return swarm.Status{}, sdk.NewError(sdk.ErrTaskNotFound, fmt.Sprintf("task %s not found", id))
	}
	if err != nil {
		return swarm.Status{}, internal(err)
	}
	return st, nil
}

func internal(err error) error {
	return fmt.Errorf("%w: %w", sdk.ErrInternalError, err)
}

// snapshot returns the task of a run as of its status st: the journal is
// read up to st.LastSeq, so that following events from there misses
// nothing and repeats nothing. Its history holds the last history
// messages (all of them when history is nil), and the files of those
// alone are loaded from the run's blobs.
func (h *taskHandler) snapshot(ctx context.Context, st swarm.Status, history *int) (*sdk.Task, error) {
	evs, err := h.rt.History(ctx, st.ID, 0)
	if err != nil {
		return nil, internal(err)
	}
	for len(evs) > 0 && evs[len(evs)-1].Seq > st.LastSeq {
		evs = evs[:len(evs)-1]
	}
	t, files := taskOf(st, evs)
	if history != nil && *history < len(t.History) {
		t.History = t.History[len(t.History)-*history:]
		files = files[len(files)-*history:]
	}
	for i, m := range t.History {
		parts, err := h.fileParts(ctx, st.ID, files[i])
		if err != nil {
			return nil, err
		}
		m.Parts = append(m.Parts, parts...)
	}
	if len(t.History) == 0 {
		t.History = nil
	}
	if st.State == swarm.StateCompleted {
		arts, err := h.partArtifacts(ctx, st.ID, st.Parts)
		if err != nil {
			return nil, err
		}
		t.Artifacts = append(t.Artifacts, arts...)
	}
	return t, nil
}

// taskOf builds the A2A task of a run from its status and journal: its
// history holds the user's messages and the questions of its pauses.
// files holds, for each message of the history, the files of a user's
// message, which snapshot adds to it (see fileParts).
func taskOf(st swarm.Status, evs []swarm.Event) (t *sdk.Task, files [][]model.Part) {
	updated := st.UpdatedAt
	t = &sdk.Task{
		ID:        sdk.TaskID(st.ID),
		ContextID: st.ID,
		Status:    sdk.TaskStatus{State: stateOf(st.State), Timestamp: &updated},
		Metadata:  map[string]any{"swarm": st.Swarm},
	}
	var pause *sdk.Message
	for _, ev := range evs {
		switch ev.Type {
		case swarm.EventStarted:
			if c, ok := ev.Values[ValueContextID].(string); ok && c != "" {
				t.ContextID = c
			}
			id := msgID(st.ID, ev.Seq)
			if m, ok := ev.Values[ValueMessageID].(string); ok && m != "" {
				id = m
			}
			t.History = append(t.History, userMessage(id, valuePart(ev.Input), ev.Parts))
			files = append(files, ev.Parts)
		case swarm.EventPaused:
			pause = &sdk.Message{ID: msgID(st.ID, ev.Seq), Role: sdk.MessageRoleAgent, Parts: sdk.ContentParts{sdk.NewTextPart(pauseText(ev.Reason, ev.Context))},
				Metadata: map[string]any{MetaPause: ev.Seq}}
			t.History = append(t.History, pause)
			files = append(files, nil)
		case swarm.EventResumed:
			t.History = append(t.History, userMessage(msgID(st.ID, ev.Seq), sdk.NewTextPart(ev.Message), ev.Parts))
			files = append(files, ev.Parts)
		case swarm.EventCompleted:
			t.Artifacts = []*sdk.Artifact{resultArtifact(ev.Result)}
		}
	}
	for _, m := range t.History {
		m.ContextID, m.TaskID = t.ContextID, t.ID
	}
	switch st.State {
	case swarm.StatePaused:
		t.Status.Message = pause
	case swarm.StateFailed, swarm.StateStopped:
		if st.Reason != "" {
			t.Status.Message = agentText(t, st.Reason)
		}
	case swarm.StateCompleted:
		if len(t.Artifacts) == 0 && len(st.Result) > 0 {
			t.Artifacts = []*sdk.Artifact{resultArtifact(st.Result)}
		}
	}
	return t, files
}

func msgID(runID string, seq int64) string { return runID + "-" + strconv.FormatInt(seq, 10) }

func agentText(ti sdk.TaskInfoProvider, text string) *sdk.Message {
	m := sdk.NewMessageForTask(sdk.MessageRoleAgent, ti, sdk.NewTextPart(text))
	return m
}

// pauseText is the question a paused run asks: its reason and context.
func pauseText(reason, context string) string {
	if context == "" {
		return reason
	}
	return reason + "\n\n" + context
}

// valuePart turns a JSON value into a part: text for a JSON string, data
// otherwise.
func valuePart(raw json.RawMessage) *sdk.Part {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return sdk.NewTextPart(s)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return sdk.NewTextPart(string(raw))
	}
	p := sdk.NewDataPart(v)
	p.MediaType = mediaJSON
	return p
}

func resultArtifact(raw json.RawMessage) *sdk.Artifact {
	return &sdk.Artifact{ID: ResultArtifactID, Name: "result", Parts: sdk.ContentParts{valuePart(raw)}}
}

// stateOf maps run states to task states.
func stateOf(s swarm.State) sdk.TaskState {
	switch s {
	case swarm.StateRunning:
		return sdk.TaskStateWorking
	case swarm.StatePaused:
		return sdk.TaskStateInputRequired
	case swarm.StateCompleted:
		return sdk.TaskStateCompleted
	case swarm.StateFailed:
		return sdk.TaskStateFailed
	case swarm.StateStopped:
		return sdk.TaskStateCanceled
	}
	return sdk.TaskStateUnspecified
}

// runState maps task states to run states; ok is false for task states no
// run is ever in.
func runState(s sdk.TaskState) (swarm.State, bool) {
	for _, st := range []swarm.State{swarm.StateRunning, swarm.StatePaused, swarm.StateCompleted, swarm.StateFailed, swarm.StateStopped} {
		if stateOf(st) == s {
			return st, true
		}
	}
	return "", false
}

// GetTask implements the GetTask method.
func (h *taskHandler) GetTask(ctx context.Context, req *sdk.GetTaskRequest) (*sdk.Task, error) {
	if err := h.check(ctx); err != nil {
		return nil, err
	}
	if req.HistoryLength != nil && *req.HistoryLength < 0 {
		return nil, sdk.NewError(sdk.ErrInvalidParams, "historyLength must not be negative")
	}
	st, err := h.status(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	return h.snapshot(ctx, st, req.HistoryLength)
}

// maxPageSize bounds ListTasks pages, as the specification does.
const maxPageSize = 100

// ListTasks implements the ListTasks method: the swarm's runs, newest
// first. The page token is the offset of the page's first task.
func (h *taskHandler) ListTasks(ctx context.Context, req *sdk.ListTasksRequest) (*sdk.ListTasksResponse, error) {
	if err := h.check(ctx); err != nil {
		return nil, err
	}
	size := req.PageSize
	switch {
	case size == 0:
		size = 50
	case size < 1 || size > maxPageSize:
		return nil, sdk.NewError(sdk.ErrInvalidParams, fmt.Sprintf("pageSize must be between 1 and %d", maxPageSize))
	}
	if req.HistoryLength != nil && *req.HistoryLength < 0 {
		return nil, sdk.NewError(sdk.ErrInvalidParams, "historyLength must not be negative")
	}
	offset := 0
	if req.PageToken != "" {
		n, err := strconv.Atoi(req.PageToken)
		if err != nil || n < 0 {
			return nil, sdk.NewError(sdk.ErrInvalidParams, fmt.Sprintf("invalid pageToken %q", req.PageToken))
		}
		offset = n
	}
	resp := &sdk.ListTasksResponse{Tasks: []*sdk.Task{}, PageSize: size}
	f := store.Filter{Swarm: h.agent.id}
	switch req.Status {
	case sdk.TaskStateUnspecified, "UNRECOGNIZED":
		// No filter. (The JavaScript SDK sends UNRECOGNIZED for a status
		// left out.)
	case sdk.TaskStateSubmitted, sdk.TaskStateRejected, sdk.TaskStateAuthRequired:
		return resp, nil // states no run is ever in
	default:
		st, ok := runState(req.Status)
		if !ok {
			return nil, sdk.NewError(sdk.ErrInvalidParams, fmt.Sprintf("unknown task state %q", req.Status))
		}
		f.State = st
	}
	runs, err := h.rt.List(ctx, f)
	if err != nil {
		return nil, internal(err)
	}
	matched := runs[:0]
	for _, r := range runs {
		if req.StatusTimestampAfter != nil && !r.UpdatedAt.After(*req.StatusTimestampAfter) {
			continue
		}
		if req.ContextID != "" && h.contextOf(ctx, r.ID) != req.ContextID {
			continue
		}
		matched = append(matched, r)
	}
	resp.TotalSize = len(matched)
	if offset >= len(matched) {
		return resp, nil
	}
	end := min(offset+size, len(matched))
	for _, r := range matched[offset:end] {
		// The list holds no pause context; Status does.
		st, err := h.rt.Status(ctx, r.ID)
		if err != nil {
			return nil, internal(err)
		}
		history := req.HistoryLength
		if history == nil {
			history = new(0) // a listed task has no history unless asked
		}
		t, err := h.snapshot(ctx, st, history)
		if err != nil {
			return nil, err
		}
		if !req.IncludeArtifacts {
			t.Artifacts = nil
		}
		resp.Tasks = append(resp.Tasks, t)
	}
	if end < len(matched) {
		resp.NextPageToken = strconv.Itoa(end)
	}
	return resp, nil
}

// contextOf returns the contextId of a run from its start record.
func (h *taskHandler) contextOf(ctx context.Context, id string) string {
	recs, err := h.rt.Store().Read(ctx, id, 0, 1)
	if err == nil && len(recs) == 1 {
		var ev swarm.Event
		if json.Unmarshal(recs[0].Data, &ev) == nil {
			if c, ok := ev.Values[ValueContextID].(string); ok && c != "" {
				return c
			}
		}
	}
	return id
}

// CancelTask implements the CancelTask method: it stops the run and
// returns the canceled task. Canceling a canceled task returns it again;
// a completed or failed task cannot be canceled.
func (h *taskHandler) CancelTask(ctx context.Context, req *sdk.CancelTaskRequest) (*sdk.Task, error) {
	if err := h.check(ctx); err != nil {
		return nil, err
	}
	st, err := h.status(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	if st.State == swarm.StateRunning || st.State == swarm.StatePaused {
		err := h.rt.Stop(ctx, st.ID, "canceled by an A2A client")
		if err != nil && !errors.Is(err, swarm.ErrInvalidState) {
			return nil, internal(err)
		}
		if st, err = h.rt.Wait(ctx, st.ID); err != nil {
			return nil, internal(err)
		}
	}
	if st.State != swarm.StateStopped {
		return nil, sdk.NewError(sdk.ErrTaskNotCancelable, fmt.Sprintf("task %s is %s and cannot be canceled", st.ID, stateOf(st.State)))
	}
	return h.snapshot(ctx, st, nil)
}

// SendMessage implements the SendMessage method: a message without a task
// id starts a run; a message to an input-required task resumes it. The
// call returns when the run pauses or ends, unless the request asks to
// return immediately.
func (h *taskHandler) SendMessage(ctx context.Context, req *sdk.SendMessageRequest) (sdk.SendMessageResult, error) {
	if err := h.check(ctx); err != nil {
		return nil, err
	}
	id, _, _, err := h.send(ctx, req)
	if err != nil {
		return nil, err
	}
	var st swarm.Status
	if req.Config != nil && req.Config.ReturnImmediately {
		st, err = h.rt.Status(ctx, id)
	} else {
		st, err = h.rt.Wait(ctx, id)
	}
	if err != nil {
		return nil, internal(err)
	}
	var history *int
	if req.Config != nil {
		history = req.Config.HistoryLength
	}
	return h.snapshot(ctx, st, history)
}

// SendStreamingMessage implements the SendStreamingMessage method: the
// task, then its status and artifact updates until it needs input or ends.
func (h *taskHandler) SendStreamingMessage(ctx context.Context, req *sdk.SendMessageRequest) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {
		if err := h.check(ctx); err != nil {
			yield(nil, err)
			return
		}
		id, contextID, after, err := h.send(ctx, req)
		if err != nil {
			yield(nil, err)
			return
		}
		now := time.Now()
		msg := *req.Message
		msg.TaskID, msg.ContextID = sdk.TaskID(id), contextID
		first := &sdk.Task{
			ID: sdk.TaskID(id), ContextID: contextID,
			Status:   sdk.TaskStatus{State: sdk.TaskStateWorking, Timestamp: &now},
			History:  []*sdk.Message{&msg},
			Metadata: map[string]any{"swarm": h.agent.id},
		}
		if !yield(first, nil) {
			return
		}
		h.follow(ctx, id, contextID, after, yield)
	}
}

// SubscribeToTask implements the SubscribeToTask method: the task as it
// is, then its updates until it needs input or ends. A finished task has
// no updates to follow.
func (h *taskHandler) SubscribeToTask(ctx context.Context, req *sdk.SubscribeToTaskRequest) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {
		if err := h.check(ctx); err != nil {
			yield(nil, err)
			return
		}
		st, err := h.status(ctx, req.ID)
		if err != nil {
			yield(nil, err)
			return
		}
		if st.Terminal() {
			yield(nil, sdk.NewError(sdk.ErrUnsupportedOperation, fmt.Sprintf("task %s is %s; a finished task has no updates", st.ID, stateOf(st.State))))
			return
		}
		t, err := h.snapshot(ctx, st, nil)
		if err != nil {
			yield(nil, err)
			return
		}
		if !yield(t, nil) || st.State == swarm.StatePaused {
			return
		}
		h.follow(ctx, st.ID, t.ContextID, st.LastSeq, yield)
	}
}

// send starts or resumes the run a message is for. It returns the run id,
// the task's contextId and the journal position to follow events from.
func (h *taskHandler) send(ctx context.Context, req *sdk.SendMessageRequest) (id, contextID string, after int64, err error) {
	switch {
	case req == nil || req.Message == nil:
		return "", "", 0, sdk.NewError(sdk.ErrInvalidParams, "message is required")
	case req.Message.ID == "":
		return "", "", 0, sdk.NewError(sdk.ErrInvalidParams, "message.messageId is required")
	case len(req.Message.Parts) == 0:
		return "", "", 0, sdk.NewError(sdk.ErrInvalidParams, "message.parts must not be empty")
	case req.Message.Role != sdk.MessageRoleUser:
		return "", "", 0, sdk.NewError(sdk.ErrInvalidParams, fmt.Sprintf("message.role must be %s", sdk.MessageRoleUser))
	}
	msg := req.Message
	for _, p := range msg.Parts {
		if p == nil {
			return "", "", 0, sdk.NewError(sdk.ErrInvalidParams, "message.parts holds a null part")
		}
		switch p.Content.(type) {
		case sdk.Text, sdk.Data, sdk.Raw, sdk.URL:
		default:
			return "", "", 0, sdk.NewError(sdk.ErrUnsupportedContentType, "only text, data and file parts are accepted")
		}
	}
	if msg.TaskID != "" {
		return h.resume(ctx, msg)
	}
	input, err := h.input(msg)
	if err != nil {
		return "", "", 0, err
	}
	contextID = msg.ContextID
	if contextID == "" {
		contextID = sdk.NewContextID()
	}
	id, err = h.rt.Start(ctx, h.agent.id, input,
		swarm.WithID(h.runID(ctx, msg.ID)),
		swarm.WithValues(map[string]any{ValueContextID: contextID, ValueMessageID: msg.ID}),
		swarm.WithParts(attachments(msg)...))
	switch {
	case errors.Is(err, swarm.ErrInvalidInput):
		return "", "", 0, sdk.NewError(sdk.ErrInvalidParams, err.Error())
	case err != nil:
		return "", "", 0, internal(err)
	}
	// A repeated message id names the run it started; report that run's
	// own context.
	return id, h.contextOf(ctx, id), 1, nil
}

// runID derives the run id from the caller and the message id, so that a
// message sent again (a retry) finds the run it started instead of
// starting another.
func (h *taskHandler) runID(ctx context.Context, messageID string) string {
	who := ""
	if p := auth.FromContext(ctx); p != nil {
		who = p.Name
	}
	sum := sha256.Sum256([]byte(h.agent.id + "\x00" + who + "\x00" + messageID))
	return "a2a_" + hex.EncodeToString(sum[:12])
}

// resume answers an input-required task with msg: its text, and its
// file parts as the answer's parts, checked as a first message's are.
func (h *taskHandler) resume(ctx context.Context, msg *sdk.Message) (string, string, int64, error) {
	st, err := h.status(ctx, msg.TaskID)
	if err != nil {
		return "", "", 0, err
	}
	contextID := h.contextOf(ctx, st.ID)
	if msg.ContextID != "" && msg.ContextID != contextID {
		return "", "", 0, sdk.NewError(sdk.ErrInvalidParams, fmt.Sprintf("contextId %q is not the context of task %s", msg.ContextID, st.ID))
	}
	switch st.State {
	case swarm.StatePaused:
	case swarm.StateRunning:
		return "", "", 0, sdk.NewError(sdk.ErrUnsupportedOperation, fmt.Sprintf("task %s is working; only an input-required task takes a follow-up message", st.ID))
	default:
		return "", "", 0, sdk.NewError(sdk.ErrUnsupportedOperation, fmt.Sprintf("task %s is %s; send a message without taskId to start a new task", st.ID, stateOf(st.State)))
	}
	var opts []swarm.ResumeOption
	pause, err := pauseOf(msg)
	if err != nil {
		return "", "", 0, err
	}
	if pause != 0 {
		opts = append(opts, swarm.AtPause(pause))
	}
	if parts := attachments(msg); len(parts) > 0 {
		opts = append(opts, swarm.ResumeParts(parts...))
	}
	err = h.rt.Resume(ctx, st.ID, messageText(msg), opts...)
	switch {
	case errors.Is(err, swarm.ErrInvalidInput):
		return "", "", 0, sdk.NewError(sdk.ErrInvalidParams, err.Error())
	case errors.Is(err, swarm.ErrPauseNotCurrent):
		return "", "", 0, sdk.NewError(sdk.ErrUnsupportedOperation, fmt.Sprintf("task %s no longer waits at pause %d (answered already, or asking again): nothing applied", st.ID, pause))
	case errors.Is(err, swarm.ErrInvalidState):
		return "", "", 0, sdk.NewError(sdk.ErrUnsupportedOperation, fmt.Sprintf("task %s is no longer input-required", st.ID))
	case err != nil:
		return "", "", 0, internal(err)
	}
	return st.ID, contextID, st.LastSeq, nil
}

// MetaPause is the metadata key naming a pause: an input-required task's
// status message (and its status update event) carries the pause's
// sequence number under it, and a follow-up message that carries it back
// answers that pause only; it is refused if the task no longer waits there.
const MetaPause = "pause"

// pauseOf reads the pause a follow-up message names (0: none).
func pauseOf(msg *sdk.Message) (int64, error) {
	v, ok := msg.Metadata[MetaPause]
	if !ok || v == nil {
		return 0, nil
	}
	var n int64
	switch x := v.(type) {
	case float64:
		n = int64(x)
		if float64(n) != x {
			n = -1
		}
	case int64:
		n = x
	case int:
		n = int64(x)
	case json.Number:
		n, _ = x.Int64()
	case string:
		n, _ = strconv.ParseInt(x, 10, 64)
	default:
		n = -1
	}
	if n <= 0 {
		return 0, sdk.NewError(sdk.ErrInvalidParams, fmt.Sprintf("metadata.%s must be the sequence number of a pause, got %v", MetaPause, v))
	}
	return n, nil
}

// input turns the parts of a message into the swarm's JSON input. A text
// swarm takes the text parts (and data parts as JSON text); a JSON swarm
// takes its first data part, or a single text part holding JSON.
func (h *taskHandler) input(msg *sdk.Message) (json.RawMessage, error) {
	if h.agent.textIn {
		return json.Marshal(messageText(msg))
	}
	var texts []string
	for _, p := range msg.Parts {
		switch c := p.Content.(type) {
		case sdk.Data:
			b, err := json.Marshal(c.Value)
			if err != nil {
				return nil, sdk.NewError(sdk.ErrInvalidParams, "data part: "+err.Error())
			}
			return b, nil
		case sdk.Text:
			texts = append(texts, string(c))
		}
	}
	text := strings.TrimSpace(strings.Join(texts, "\n"))
	if !json.Valid([]byte(text)) {
		return nil, sdk.NewError(sdk.ErrInvalidParams, fmt.Sprintf("swarm %s takes a JSON input matching its schema (see its agent card): send a data part, or a text part holding JSON", h.agent.id))
	}
	return json.RawMessage(text), nil
}

// attachments are the file parts of a message (bytes, or a URL) as model
// parts: the run's input parts of a first message, the answer's parts of
// a follow-up; images, audio and other files by media type, with their
// names. The run validates them (an invalid one is InvalidParams).
func attachments(msg *sdk.Message) []model.Part {
	var out []model.Part
	for _, p := range msg.Parts {
		switch c := p.Content.(type) {
		case sdk.Raw:
			out = append(out, model.Attachment(p.Filename, p.MediaType, c))
		case sdk.URL:
			part := model.Part{Type: model.PartFile, URL: string(c), Name: p.Filename, MediaType: p.MediaType}
			if strings.HasPrefix(p.MediaType, "image/") {
				part.Type, part.Name = model.PartImage, ""
			}
			out = append(out, part)
		}
	}
	return out
}

// messageText is the text of a message: its text parts, its data parts as
// JSON and its URL parts as URLs, one per line.
func messageText(msg *sdk.Message) string {
	var b strings.Builder
	for _, p := range msg.Parts {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		switch c := p.Content.(type) {
		case sdk.Text:
			b.WriteString(string(c))
		case sdk.Data:
			d, err := json.Marshal(c.Value)
			if err == nil {
				b.Write(d)
			}
		case sdk.URL:
			b.WriteString(string(c))
		case sdk.Raw:
			fmt.Fprintf(&b, "[%d bytes of %s]", len(c), p.MediaType)
		}
	}
	return b.String()
}

// follow yields the A2A events of run id after journal position after,
// until the run needs input or ends, or ctx ends.
func (h *taskHandler) follow(ctx context.Context, id, contextID string, after int64, yield func(sdk.Event, error) bool) {
	ti := sdk.TaskInfo{TaskID: sdk.TaskID(id), ContextID: contextID}
	for ev, err := range h.rt.Events(ctx, id, after) {
		if err != nil {
			if ctx.Err() == nil {
				yield(nil, internal(err))
			}
			return
		}
		var arts []*sdk.Artifact
		if ev.Type == swarm.EventCompleted {
			if arts, err = h.partArtifacts(ctx, id, ev.Parts); err != nil {
				yield(nil, err)
				return
			}
		}
		out, final := eventsOf(ti, ev, arts)
		for _, e := range out {
			if !yield(e, nil) {
				return
			}
		}
		if final {
			return
		}
	}
}

// eventsOf maps a journal event to A2A events; final is true when the
// task needs input or has ended.
func eventsOf(ti sdk.TaskInfo, ev swarm.Event, parts []*sdk.Artifact) (out []sdk.Event, final bool) {
	status := func(state sdk.TaskState, text string) *sdk.TaskStatusUpdateEvent {
		var m *sdk.Message
		if text != "" {
			m = agentText(ti, text)
		}
		e := sdk.NewStatusUpdateEvent(ti, state, m)
		if !ev.Time.IsZero() {
			t := ev.Time
			e.Status.Timestamp = &t
		}
		if ev.Agent != "" {
			e.SetMeta("agent", ev.Agent)
		}
		return e
	}
	switch ev.Type {
	case swarm.EventModelResponse:
		if ev.Text != "" {
			return []sdk.Event{status(sdk.TaskStateWorking, ev.Text)}, false
		}
	case swarm.EventHandoffStarted:
		return []sdk.Event{status(sdk.TaskStateWorking, "Delegating to "+ev.Target+": "+ev.Request)}, false
	case swarm.EventResumed:
		return []sdk.Event{status(sdk.TaskStateWorking, "")}, false
	case swarm.EventPaused:
		e := status(sdk.TaskStateInputRequired, pauseText(ev.Reason, ev.Context))
		e.SetMeta(MetaPause, ev.Seq)
		if e.Status.Message != nil {
			e.Status.Message.Metadata = map[string]any{MetaPause: ev.Seq}
		}
		return []sdk.Event{e}, true
	case swarm.EventCompleted:
		out = append(out, &sdk.TaskArtifactUpdateEvent{TaskID: ti.TaskID, ContextID: ti.ContextID, Artifact: resultArtifact(ev.Result), LastChunk: true})
		for _, a := range parts {
			out = append(out, &sdk.TaskArtifactUpdateEvent{TaskID: ti.TaskID, ContextID: ti.ContextID, Artifact: a, LastChunk: true})
		}
		return append(out, status(sdk.TaskStateCompleted, "")), true
	case swarm.EventFailed:
		return []sdk.Event{status(sdk.TaskStateFailed, ev.Reason)}, true
	case swarm.EventStopped:
		return []sdk.Event{status(sdk.TaskStateCanceled, ev.Reason)}, true
	}
	return nil, false
}

// GetTaskPushConfig is not supported: push notifications are not offered.
func (h *taskHandler) GetTaskPushConfig(context.Context, *sdk.GetTaskPushConfigRequest) (*sdk.PushConfig, error) {
	return nil, sdk.ErrPushNotificationNotSupported
}

// ListTaskPushConfigs is not supported: push notifications are not offered.
func (h *taskHandler) ListTaskPushConfigs(context.Context, *sdk.ListTaskPushConfigRequest) (*sdk.ListTaskPushConfigResponse, error) {
	return nil, sdk.ErrPushNotificationNotSupported
}

// CreateTaskPushConfig is not supported: push notifications are not
// offered.
func (h *taskHandler) CreateTaskPushConfig(context.Context, *sdk.PushConfig) (*sdk.PushConfig, error) {
	return nil, sdk.ErrPushNotificationNotSupported
}

// DeleteTaskPushConfig is not supported: push notifications are not
// offered.
func (h *taskHandler) DeleteTaskPushConfig(context.Context, *sdk.DeleteTaskPushConfigRequest) error {
	return sdk.ErrPushNotificationNotSupported
}

// GetExtendedAgentCard is not supported: the public card says everything.
func (h *taskHandler) GetExtendedAgentCard(context.Context, *sdk.GetExtendedAgentCardRequest) (*sdk.AgentCard, error) {
	return nil, sdk.ErrExtendedCardNotConfigured
}
