package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/swarmrt/swarm"
)

// TasksExtension is the identifier of the MCP Tasks extension: a client
// that declares it in a request's capabilities may get a task in answer to
// a tools/call, and follows it with tasks/get, tasks/update and
// tasks/cancel.
const TasksExtension = "io.modelcontextprotocol/tasks"

// The methods of the Tasks extension.
const (
	methodTasksGet    = "tasks/get"
	methodTasksUpdate = "tasks/update"
	methodTasksCancel = "tasks/cancel"
)

// Error codes of the 2026-07-28 revision.
const (
	codeHeaderMismatch          = -32020
	codeMissingClientCapability = -32021
)

// TaskPollInterval is the polling interval a task suggests to its client.
const TaskPollInterval = time.Second

// DefaultTaskWait is how long a tools/call from a client that speaks the
// Tasks extension waits for its run before answering with a task.
const DefaultTaskWait = time.Second

// pauseKeyPrefix starts the inputRequests key of a paused run's pause; the
// pause's sequence number follows, which makes the key unique over the
// run's life as the extension requires.
const pauseKeyPrefix = "pause-"

// Task is a swarm run as a task of the MCP Tasks extension: the task id is
// the run id, and its state is the run's, read from the store at every
// request (so a task outlives the process that started it, and any node
// serving the same store answers for it).
//
//   - a running run is "working";
//   - a paused run is "input_required", its pause an elicitation keyed
//     "pause-N" (N: the pause's sequence number) asking for a message;
//   - a completed or failed run is "completed", with the tool result the
//     call would have returned (isError for a failed run);
//   - a stopped run is "cancelled".
type Task struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	// TTLMs is always null: runs are kept until deleted.
	TTLMs          *int64 `json:"ttlMs"`
	PollIntervalMs int64  `json:"pollIntervalMs,omitempty"`
	// InputRequests holds the pause of an input_required task.
	InputRequests map[string]InputRequest `json:"inputRequests,omitempty"`
	// Result is the tool result of a completed task (a CallToolResult,
	// with its resultType).
	Result json.RawMessage `json:"result,omitempty"`
}

// InputRequest is a request for the client's input carried by a task: an
// elicitation/create asking for the answer to a paused run.
type InputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// InputResponse is the client's answer to an [InputRequest] (an
// elicitation result): action "accept" with content {"message": "..."}.
type InputResponse struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// taskResult is a Task as the result of a request: resultType "task" when
// it answers a tools/call (CreateTaskResult), "complete" for tasks/get.
type taskResult struct {
	sdk.ResultBase
	ResultType string `json:"resultType"`
	Task
}

// wantsTasks reports whether a request's _meta declares the Tasks
// extension among the client's capabilities (2026-07-28 per-request
// capabilities).
func wantsTasks(meta map[string]any) bool {
	caps, _ := meta[sdk.MetaKeyClientCapabilities].(map[string]any)
	exts, _ := caps["extensions"].(map[string]any)
	_, ok := exts[TasksExtension]
	return ok
}

// taskOf describes the run of st as a task; res is its tool result when
// it has ended (outcomeResult of st when nil).
func taskOf(st swarm.Status, res *sdk.CallToolResult) Task {
	t := Task{
		TaskID:         st.ID,
		CreatedAt:      st.CreatedAt.UTC().Format(time.RFC3339Nano),
		LastUpdatedAt:  st.UpdatedAt.UTC().Format(time.RFC3339Nano),
		PollIntervalMs: TaskPollInterval.Milliseconds(),
	}
	switch st.State {
	case swarm.StatePaused:
		t.Status = "input_required"
		t.StatusMessage = st.Reason
		t.InputRequests = map[string]InputRequest{pauseKeyPrefix + strconv.FormatInt(st.Pause, 10): pauseRequest(st)}
	case swarm.StateCompleted, swarm.StateFailed:
		t.Status = "completed"
		t.StatusMessage = string(st.State)
		if st.Reason != "" {
			t.StatusMessage += ": " + st.Reason
		}
		if res == nil {
			res = outcomeResult(st)
		}
		t.Result, _ = json.Marshal(&typedResult{res: res})
	case swarm.StateStopped:
		t.Status = "cancelled"
		t.StatusMessage = st.Reason
	default:
		t.Status = "working"
		if st.Agent != "" {
			t.StatusMessage = fmt.Sprintf("%s at turn %d of %d", st.Agent, st.Turn, st.MaxTurns)
		}
	}
	return t
}

// pauseRequest is the elicitation that asks for the answer to the pause of
// st.
func pauseRequest(st swarm.Status) InputRequest {
	msg := st.Reason
	if st.Context != "" {
		msg += "\n\nContext: " + st.Context
	}
	params, _ := json.Marshal(map[string]any{
		"mode":    "form",
		"message": msg,
		"requestedSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"message": map[string]any{"type": "string", "title": "Answer", "description": "The answer to the run's question."},
			},
			"required": []string{"message"},
		},
	})
	return InputRequest{Method: "elicitation/create", Params: params}
}

// taskCalls answers a tools/call of a swarm from a client that declares the
// Tasks extension: the run starts as for any call, and if it has not ended
// after the server's task wait, the answer is the run as a task.
func (s *server) taskCalls(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		r, ok := req.(*sdk.CallToolRequest)
		if !ok || method != "tools/call" || r.Params == nil || !wantsTasks(r.Params.Meta) {
			return next(ctx, method, req)
		}
		if _, isSwarm := s.defs[r.Params.Name]; !isSwarm {
			return next(ctx, method, req)
		}
		ctx = callerContext(ctx, r.Extra)
		runID, res, err := s.start(ctx, r.Params.Name, r.Params.Arguments)
		if err != nil {
			return nil, err
		}
		if res != nil {
			return res, nil
		}
		wctx, cancel := context.WithTimeout(ctx, max(s.taskWait, 0))
		st, err := s.rt.Wait(wctx, runID)
		cancel()
		if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			// Still running: the task's first state.
			st, err = s.rt.Status(ctx, runID)
		}
		if err != nil {
			return nil, fmt.Errorf("run %s of %s: %w", runID, r.Params.Name, err)
		}
		if st.State == swarm.StateCompleted || st.State == swarm.StateFailed {
			return s.outcome(ctx, st), nil
		}
		return &taskResult{ResultType: "task", Task: taskOf(st, nil)}, nil
	}
}

// taskError is a JSON-RPC error of a tasks/* request with the HTTP status
// it is answered with.
type taskError struct {
	status int
	err    *jsonrpc.Error
}

func invalidTask(format string, args ...any) *taskError {
	return &taskError{status: 200, err: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}}
}

// taskParams are the parameters of tasks/get, tasks/update and
// tasks/cancel.
type taskParams struct {
	Meta           map[string]any           `json:"_meta"`
	TaskID         string                   `json:"taskId"`
	InputResponses map[string]InputResponse `json:"inputResponses"`
}

// handleTask answers a tasks/* request of the caller in ctx.
func (s *server) handleTask(ctx context.Context, method string, p taskParams) (any, *taskError) {
	if p.TaskID == "" {
		return nil, invalidTask("%s: missing taskId", method)
	}
	st, err := s.rt.Status(ctx, p.TaskID)
	if err != nil && !errors.Is(err, swarm.ErrNotFound) {
		return nil, &taskError{status: 200, err: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}}
	}
	// Only the runs that tools/call starts are tasks; those of a swarm
	// the caller may not use are answered as unknown ones, so that the
	// answer does not tell whether the id exists.
	if _, ok := s.defs[st.Swarm]; err != nil || !ok || st.Parent != "" || check(ctx, st.Swarm) != nil {
		return nil, invalidTask("Failed to retrieve task: Task not found")
	}
	switch method {
	case methodTasksGet:
		var res *sdk.CallToolResult
		if st.State == swarm.StateCompleted {
			res = s.outcome(ctx, st)
		}
		return &taskResult{ResultType: "complete", Task: taskOf(st, res)}, nil
	case methodTasksCancel:
		if st.State == swarm.StateRunning || st.State == swarm.StatePaused {
			if err := s.rt.Stop(ctx, st.ID, "cancelled by the MCP client"); err != nil && !errors.Is(err, swarm.ErrInvalidState) {
				return nil, &taskError{status: 200, err: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}}
			}
			s.log.Info("run cancelled", "swarm", st.Swarm, "run", st.ID)
		}
		return ack(), nil
	}
	// tasks/update: the answer to the current pause; answers to keys that
	// are not outstanding are ignored, as the extension asks.
	key := pauseKeyPrefix + strconv.FormatInt(st.Pause, 10)
	resp, ok := p.InputResponses[key]
	if st.State != swarm.StatePaused || !ok {
		return ack(), nil
	}
	if resp.Action != "accept" {
		return nil, invalidTask("tasks/update: %s answers the pause with action %q; only accept (with content.message) answers it, and tasks/cancel stops the run", key, resp.Action)
	}
	msg, ok := resp.Content["message"].(string)
	if !ok {
		return nil, invalidTask(`tasks/update: the answer to %s needs content {"message": "..."}`, key)
	}
	if err := s.rt.Resume(ctx, st.ID, msg, swarm.AtPause(st.Pause)); err != nil {
		if errors.Is(err, swarm.ErrPauseNotCurrent) || errors.Is(err, swarm.ErrInvalidState) {
			// Answered already (by another client): nothing outstanding.
			return ack(), nil
		}
		return nil, &taskError{status: 200, err: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}}
	}
	s.log.Info("run resumed", "swarm", st.Swarm, "run", st.ID)
	return ack(), nil
}

// ack is the empty acknowledgement of tasks/update and tasks/cancel.
func ack() map[string]any { return map[string]any{"resultType": "complete"} }

// taskMetaError checks the _meta of a tasks/* request: the per-request
// protocol version (one this server speaks) and capabilities, which must
// declare the extension.
func taskMetaError(method string, meta map[string]any) *jsonrpc.Error {
	version, _ := meta[sdk.MetaKeyProtocolVersion].(string)
	_, hasCaps := meta[sdk.MetaKeyClientCapabilities].(map[string]any)
	switch {
	case version == "" || !hasCaps:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: _meta needs %q and %q", method, sdk.MetaKeyProtocolVersion, sdk.MetaKeyClientCapabilities)}
	case !slices.Contains(sdk.SupportedProtocolVersions(), version):
		return unsupportedVersion(version)
	case !wantsTasks(meta):
		return missingTasksCapability()
	}
	return nil
}

// missingTasksCapability is the error of a tasks/* request from a client
// that did not declare the extension.
func missingTasksCapability() *jsonrpc.Error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}}})
	return &jsonrpc.Error{Code: codeMissingClientCapability, Message: "Missing required client capability", Data: data}
}

// isTaskMethod reports whether method is one of the extension's requests.
func isTaskMethod(method string) bool {
	return method == methodTasksGet || method == methodTasksUpdate || method == methodTasksCancel
}

// withServerInfo adds the server's identity to a result's _meta, as the
// 2026-07-28 revision asks of every result.
func withServerInfo(res any, impl *sdk.Implementation) any {
	if tr, ok := res.(*taskResult); ok {
		m := maps.Clone(tr.Meta)
		if m == nil {
			m = map[string]any{}
		}
		m["io.modelcontextprotocol/serverInfo"] = impl
		tr.Meta = m
	}
	return res
}

// protocolVersionModern reports whether an MCP-Protocol-Version header
// names the stateless revision (2026-07-28) or a later one.
func protocolVersionModern(v string) bool {
	return v >= "2026-07-28" && strings.Count(v, "-") == 2
}

// typedResult gives a result of tools/call, prompts/get or resources/read
// the resultType that the 2026-07-28 revision requires of every result
// and that the SDK leaves out of these in stateless sessions.
type typedResult struct {
	sdk.ResultBase
	res sdk.Result
}

// GetMeta returns the wrapped result's _meta.
func (r *typedResult) GetMeta() map[string]any { return r.res.GetMeta() }

// SetMeta sets the wrapped result's _meta.
func (r *typedResult) SetMeta(m map[string]any) { r.res.SetMeta(m) }

// MarshalJSON encodes the wrapped result with its resultType.
func (r *typedResult) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.res)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if _, ok := m["resultType"]; !ok {
		m["resultType"] = json.RawMessage(`"complete"`)
	}
	return json.Marshal(m)
}

// typeResults wraps the results of stateless requests in typedResult.
func typeResults(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || res == nil || (method != "tools/call" && method != "prompts/get" && method != "resources/read") {
			return res, err
		}
		if _, isTask := res.(*taskResult); isTask {
			return res, nil
		}
		if p := req.GetParams(); p != nil {
			if v, _ := p.GetMeta()[sdk.MetaKeyProtocolVersion].(string); protocolVersionModern(v) {
				return &typedResult{res: res}, nil
			}
		}
		return res, nil
	}
}
