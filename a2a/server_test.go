package a2a_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/a2a"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/server"
	"github.com/swarmrt/swarm/swarmtest"
)

// Plan is the JSON result of the planner swarm.
type Plan struct {
	Activity string `json:"activity"`
	Hours    int    `json:"hours"`
}

// Ask is the JSON input of the planner swarm.
type Ask struct {
	City string `json:"city"`
}

// script drives the test swarms: echo answers at once, approver pauses
// for approval first, slow never answers on its own, failer gives up,
// planner completes with a JSON result; inspector asks for a screenshot,
// and its model checks that the answer carries it.
var script = scripted.Script{
	"echo": {scripted.Text("hello back")},
	"approver": {
		scripted.Tools(scripted.CallTool("pause", map[string]any{"reason": "approve?", "context": "costs $5"})),
		scripted.Text("approved and done"),
	},
	"slow": {{Text: "too late", Delay: time.Hour}},
	"thumbnailer": {
		{ExpectParts: []scripted.ExpectPart{{Type: model.PartImage, MediaType: "image/png", MinBytes: 20000}}, ToolCalls: []scripted.ToolCall{scripted.CallTool("thumbnail", nil)}},
		scripted.Text("thumbnail attached"),
	},
	"inspector": {
		scripted.Tools(scripted.CallTool("pause", map[string]any{"reason": "send me a screenshot"})),
		{ExpectParts: []scripted.ExpectPart{{Type: model.PartImage, MediaType: "image/png", MinBytes: 20000}}, Text: "the screenshot shows the error"},
	},
	"failer": {scripted.Tools(scripted.CallTool("fail", map[string]any{"reason": "no luck"}))},
	"planner": {scripted.Tools(scripted.CallTool("complete", map[string]any{
		"result": map[string]any{"activity": "hiking", "hours": 3},
	}))},
}

func defs() []swarm.Definition {
	text := func(id, desc string) *swarm.Swarm[string, string] {
		return swarm.Define[string, string](id, desc, func(string) swarm.Spec { return swarm.Spec{Instructions: "You are " + id + "."} })
	}
	return []swarm.Definition{
		text("echo", "Echoes").WithTags("test", "echo"),
		text("approver", "Asks for approval first"),
		text("slow", "Takes forever"),
		text("failer", "Always fails"),
		swarm.Define[Ask, Plan]("planner", "Plans outdoor activities", func(Ask) swarm.Spec {
			return swarm.Spec{Instructions: "Plan."}
		}).WithTags("plans", "outdoor"),
	}
}

type env struct {
	rt  *swarm.Runtime
	srv *httptest.Server
}

// newEnv serves the test swarms. wrap, when set, wraps the handler (to put
// auth middleware in front of it).
func newEnv(t *testing.T, opts a2a.Options, wrap func(http.Handler) http.Handler, extra ...swarm.Definition) *env {
	t.Helper()
	rt, _ := swarmtest.NewRuntime(t, script, append(defs(), extra...)...)
	h, err := a2a.NewHandler(rt, opts)
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &env{rt: rt, srv: srv}
}

// tokenTransport adds a bearer token to requests.
type tokenTransport string

func (tt tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(tt))
	return http.DefaultTransport.RoundTrip(r)
}

func httpClient(token string) *http.Client {
	if token == "" {
		return &http.Client{Transport: http.DefaultTransport}
	}
	return &http.Client{Transport: tokenTransport(token)}
}

// client connects the SDK's own client to swarm id, the way any A2A client
// does: card first, then the interface the card names.
func (e *env) client(t *testing.T, id, token string) *a2aclient.Client {
	t.Helper()
	ctx := swarmtest.Context(t)
	hc := httpClient(token)
	card, err := agentcard.NewResolver(hc).Resolve(ctx, e.srv.URL+a2a.PathPrefix+id)
	if err != nil {
		t.Fatalf("resolve card of %s: %v", id, err)
	}
	c, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

func text(s string) *sdk.Message { return sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart(s)) }

func send(t *testing.T, c *a2aclient.Client, m *sdk.Message) *sdk.Task {
	t.Helper()
	res, err := c.SendMessage(swarmtest.Context(t), &sdk.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	task, ok := res.(*sdk.Task)
	if !ok {
		t.Fatalf("SendMessage returned %T, want a task", res)
	}
	return task
}

func artifactText(t *testing.T, task *sdk.Task) string {
	t.Helper()
	if len(task.Artifacts) != 1 || len(task.Artifacts[0].Parts) != 1 {
		t.Fatalf("task %s artifacts = %+v, want one with one part", task.ID, task.Artifacts)
	}
	return task.Artifacts[0].Parts[0].Text()
}

func statusText(task *sdk.Task) string {
	if task.Status.Message == nil || len(task.Status.Message.Parts) == 0 {
		return ""
	}
	return task.Status.Message.Parts[0].Text()
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
}

func TestCard(t *testing.T) {
	a, err := auth.New([]auth.Token{{Name: "t", Secret: "s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, a2a.Options{Auth: a, Default: "planner"}, nil)
	for _, path := range []string{"/a2a/planner/.well-known/agent-card.json", "/.well-known/agent-card.json"} {
		resp, err := http.Get(e.srv.URL + path) // public: no token
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s = %d %s", path, resp.StatusCode, body)
		}
		var card sdk.AgentCard
		if err := json.Unmarshal(body, &card); err != nil {
			t.Fatal(err)
		}
		if card.Name != "planner" || card.Description != "Plans outdoor activities" || !card.Capabilities.Streaming {
			t.Errorf("card = %+v", card)
		}
		if len(card.SupportedInterfaces) != 1 || card.SupportedInterfaces[0].URL != e.srv.URL+"/a2a/planner" ||
			card.SupportedInterfaces[0].ProtocolBinding != sdk.TransportProtocolJSONRPC || card.SupportedInterfaces[0].ProtocolVersion != sdk.Version {
			t.Errorf("interfaces = %+v", card.SupportedInterfaces[0])
		}
		if len(card.Skills) != 1 || strings.Join(card.Skills[0].Tags, ",") != "plans,outdoor" || card.Skills[0].ID != "planner" ||
			!strings.Contains(card.Skills[0].Description, `"city"`) {
			t.Errorf("skills = %+v", card.Skills)
		}
		if strings.Join(card.DefaultInputModes, ",") != "application/json" || strings.Join(card.DefaultOutputModes, ",") != "application/json" {
			t.Errorf("modes = %v %v", card.DefaultInputModes, card.DefaultOutputModes)
		}
		s, ok := card.SecuritySchemes[a2a.BearerScheme].(sdk.HTTPAuthSecurityScheme)
		if !ok || s.Scheme != "Bearer" || len(card.SecurityRequirements) != 1 {
			t.Errorf("security = %+v %+v", card.SecuritySchemes, card.SecurityRequirements)
		}
		if !strings.Contains(string(body), `"securitySchemes":{"bearer":{"httpAuthSecurityScheme":{`) {
			t.Errorf("card JSON lacks the bearer scheme: %s", body)
		}
	}

	// A text swarm, without auth: text modes, no security.
	e = newEnv(t, a2a.Options{BaseURL: "https://agents.example.com/"}, nil)
	card, err := agentcard.DefaultResolver.Resolve(swarmtest.Context(t), e.srv.URL+"/a2a/echo")
	if err != nil {
		t.Fatal(err)
	}
	if card.SupportedInterfaces[0].URL != "https://agents.example.com/a2a/echo" || card.DefaultInputModes[0] != "text/plain" ||
		card.SecuritySchemes != nil || strings.Join(card.Skills[0].Tags, ",") != "test,echo" {
		t.Errorf("echo card = %+v", card)
	}
	for path, want := range map[string]int{
		"/.well-known/agent-card.json":          404, // several swarms and no default
		"/a2a/nope/.well-known/agent-card.json": 404,
		"/a2a/echo/other":                       404,
		"/elsewhere":                            404,
	} {
		resp, err := http.Get(e.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s = %d, want %d", path, resp.StatusCode, want)
		}
	}
	if _, err := a2a.NewHandler(e.rt, a2a.Options{Swarms: []string{"nope"}}); !errors.Is(err, swarm.ErrUnknownSwarm) {
		t.Errorf("unknown swarm: %v", err)
	}
}

func TestSendGetList(t *testing.T) {
	e := newEnv(t, a2a.Options{}, nil)
	c := e.client(t, "echo", "")
	m := text("hello")
	m.ContextID = "ctx-1"
	task := send(t, c, m)
	if task.Status.State != sdk.TaskStateCompleted || artifactText(t, task) != "hello back" || task.ContextID != "ctx-1" {
		t.Fatalf("task = %+v", task)
	}
	if len(task.History) != 1 || task.History[0].ID != m.ID || task.History[0].Parts[0].Text() != "hello" {
		t.Errorf("history = %+v", task.History)
	}
	// The task is the run.
	swarmtest.AssertState(t, e.rt, string(task.ID), swarm.StateCompleted)

	// The same message again is the same task, not a second run.
	again := send(t, c, m)
	if again.ID != task.ID {
		t.Errorf("resent message started task %s, want %s", again.ID, task.ID)
	}
	other := send(t, c, text("hi"))

	got, err := c.GetTask(swarmtest.Context(t), &sdk.GetTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.State != sdk.TaskStateCompleted || artifactText(t, got) != "hello back" || got.ContextID != "ctx-1" {
		t.Errorf("GetTask = %+v", got)
	}
	zero := 0
	got, err = c.GetTask(swarmtest.Context(t), &sdk.GetTaskRequest{ID: task.ID, HistoryLength: &zero})
	if err != nil || len(got.History) != 0 {
		t.Errorf("GetTask historyLength 0 = %+v, %v", got, err)
	}

	list, err := c.ListTasks(swarmtest.Context(t), &sdk.ListTasksRequest{PageSize: 1, IncludeArtifacts: true})
	if err != nil {
		t.Fatal(err)
	}
	if list.TotalSize != 2 || len(list.Tasks) != 1 || list.Tasks[0].ID != other.ID || list.NextPageToken == "" || len(list.Tasks[0].Artifacts) != 1 {
		t.Fatalf("page 1 = %+v", list)
	}
	list, err = c.ListTasks(swarmtest.Context(t), &sdk.ListTasksRequest{PageSize: 1, PageToken: list.NextPageToken})
	if err != nil || len(list.Tasks) != 1 || list.Tasks[0].ID != task.ID || list.NextPageToken != "" || list.Tasks[0].Artifacts != nil {
		t.Fatalf("page 2 = %+v, %v", list, err)
	}
	list, err = c.ListTasks(swarmtest.Context(t), &sdk.ListTasksRequest{ContextID: "ctx-1"})
	if err != nil || list.TotalSize != 1 || list.Tasks[0].ID != task.ID {
		t.Fatalf("by context = %+v, %v", list, err)
	}
	list, err = c.ListTasks(swarmtest.Context(t), &sdk.ListTasksRequest{Status: sdk.TaskStateInputRequired})
	if err != nil || list.TotalSize != 0 {
		t.Fatalf("by state = %+v, %v", list, err)
	}
	list, err = c.ListTasks(swarmtest.Context(t), &sdk.ListTasksRequest{Status: sdk.TaskStateRejected})
	if err != nil || list.TotalSize != 0 {
		t.Fatalf("rejected = %+v, %v", list, err)
	}
	_, err = c.ListTasks(swarmtest.Context(t), &sdk.ListTasksRequest{Status: "TASK_STATE_SLEEPY"})
	wantErr(t, err, sdk.ErrInvalidParams)
	_, err = c.ListTasks(swarmtest.Context(t), &sdk.ListTasksRequest{PageToken: "x"})
	wantErr(t, err, sdk.ErrInvalidParams)
	_, err = c.ListTasks(swarmtest.Context(t), &sdk.ListTasksRequest{PageSize: 1000})
	wantErr(t, err, sdk.ErrInvalidParams)
}

func TestJSONSwarm(t *testing.T) {
	e := newEnv(t, a2a.Options{}, nil)
	c := e.client(t, "planner", "")
	task := send(t, c, sdk.NewMessage(sdk.MessageRoleUser, sdk.NewDataPart(map[string]any{"city": "Oslo"})))
	if task.Status.State != sdk.TaskStateCompleted {
		t.Fatalf("task = %+v", task)
	}
	data, ok := task.Artifacts[0].Parts[0].Data().(map[string]any)
	if !ok || data["activity"] != "hiking" || data["hours"] != float64(3) {
		t.Errorf("artifact = %+v", task.Artifacts[0].Parts[0])
	}
	// JSON as text is accepted too; other text is not.
	if task := send(t, c, text(`{"city":"Rome"}`)); task.Status.State != sdk.TaskStateCompleted {
		t.Errorf("JSON text: %+v", task)
	}
	_, err := c.SendMessage(swarmtest.Context(t), &sdk.SendMessageRequest{Message: text("Rome please")})
	wantErr(t, err, sdk.ErrInvalidParams)
	_, err = c.SendMessage(swarmtest.Context(t), &sdk.SendMessageRequest{Message: sdk.NewMessage(sdk.MessageRoleUser, sdk.NewDataPart(map[string]any{"city": 3}))})
	wantErr(t, err, sdk.ErrInvalidParams)
	// A file is an attachment, not the input: alone, the input is missing.
	_, err = c.SendMessage(swarmtest.Context(t), &sdk.SendMessageRequest{Message: sdk.NewMessage(sdk.MessageRoleUser, sdk.NewFileURLPart("https://example.com/a.pdf", "application/pdf"))})
	wantErr(t, err, sdk.ErrInvalidParams)
}

func TestPauseResume(t *testing.T) {
	e := newEnv(t, a2a.Options{}, nil)
	c := e.client(t, "approver", "")
	task := send(t, c, text("buy it"))
	if task.Status.State != sdk.TaskStateInputRequired || statusText(task) != "approve?\n\ncosts $5" {
		t.Fatalf("task = %+v", task)
	}
	follow := text("yes")
	follow.TaskID = task.ID
	done := send(t, c, follow)
	if done.ID != task.ID || done.Status.State != sdk.TaskStateCompleted || artifactText(t, done) != "approved and done" {
		t.Fatalf("after follow-up: %+v", done)
	}
	var roles []string
	for _, m := range done.History {
		roles = append(roles, string(m.Role)+":"+m.Parts[0].Text())
	}
	if got := strings.Join(roles, "|"); got != "ROLE_USER:buy it|ROLE_AGENT:approve?\n\ncosts $5|ROLE_USER:yes" {
		t.Errorf("history = %q", got)
	}
	// Resuming a completed task is refused, and changes nothing.
	again := text("yes again")
	again.TaskID = task.ID
	_, err := c.SendMessage(swarmtest.Context(t), &sdk.SendMessageRequest{Message: again})
	wantErr(t, err, sdk.ErrUnsupportedOperation)
	swarmtest.AssertState(t, e.rt, string(task.ID), swarm.StateCompleted)
	swarmtest.AssertJournal(t, e.rt, string(task.ID))

	// Unknown task; a task of another swarm is unknown here too; a
	// context that is not the task's.
	unknown := text("x")
	unknown.TaskID = "nope"
	_, err = c.SendMessage(swarmtest.Context(t), &sdk.SendMessageRequest{Message: unknown})
	wantErr(t, err, sdk.ErrTaskNotFound)
	echo := send(t, e.client(t, "echo", ""), text("hi"))
	_, err = c.GetTask(swarmtest.Context(t), &sdk.GetTaskRequest{ID: echo.ID})
	wantErr(t, err, sdk.ErrTaskNotFound)
	paused := send(t, c, text("again"))
	wrongCtx := text("yes")
	wrongCtx.TaskID, wrongCtx.ContextID = paused.ID, "other"
	_, err = c.SendMessage(swarmtest.Context(t), &sdk.SendMessageRequest{Message: wrongCtx})
	wantErr(t, err, sdk.ErrInvalidParams)
}

// collect reads a stream to its end.
func collect(t *testing.T, events func(func(sdk.Event, error) bool)) []sdk.Event {
	t.Helper()
	var out []sdk.Event
	for ev, err := range events {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		out = append(out, ev)
	}
	return out
}

// kinds summarizes events: task:STATE, status:STATE, artifact:TEXT.
func kinds(evs []sdk.Event) string {
	var out []string
	for _, ev := range evs {
		switch v := ev.(type) {
		case *sdk.Task:
			out = append(out, "task:"+string(v.Status.State))
		case *sdk.TaskStatusUpdateEvent:
			out = append(out, "status:"+string(v.Status.State))
		case *sdk.TaskArtifactUpdateEvent:
			out = append(out, "artifact:"+v.Artifact.Parts[0].Text())
		default:
			out = append(out, "other")
		}
	}
	return strings.Join(out, " ")
}

func TestStreaming(t *testing.T) {
	e := newEnv(t, a2a.Options{}, nil)
	c := e.client(t, "approver", "")
	ctx := swarmtest.Context(t)
	evs := collect(t, c.SendStreamingMessage(ctx, &sdk.SendMessageRequest{Message: text("buy it")}))
	if got := kinds(evs); got != "task:TASK_STATE_WORKING status:TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("first stream = %s", got)
	}
	id := evs[0].TaskInfo().TaskID
	if q := evs[1].(*sdk.TaskStatusUpdateEvent).Status.Message.Parts[0].Text(); q != "approve?\n\ncosts $5" {
		t.Errorf("question = %q", q)
	}
	follow := text("yes")
	follow.TaskID = id
	evs = collect(t, c.SendStreamingMessage(ctx, &sdk.SendMessageRequest{Message: follow}))
	want := "task:TASK_STATE_WORKING status:TASK_STATE_WORKING status:TASK_STATE_WORKING artifact:approved and done status:TASK_STATE_COMPLETED"
	if got := kinds(evs); got != want {
		t.Fatalf("second stream = %s, want %s", got, want)
	}
	for _, ev := range evs {
		if ev.TaskInfo().TaskID != id || ev.TaskInfo().ContextID == "" {
			t.Errorf("event %T names task %+v, want %s", ev, ev.TaskInfo(), id)
		}
	}
	// Subscribing to a finished task is refused.
	for _, err := range c.SubscribeToTask(ctx, &sdk.SubscribeToTaskRequest{ID: id}) {
		wantErr(t, err, sdk.ErrUnsupportedOperation)
	}
	for _, err := range c.SubscribeToTask(ctx, &sdk.SubscribeToTaskRequest{ID: "nope"}) {
		wantErr(t, err, sdk.ErrTaskNotFound)
	}
}

func TestSubscribeCancel(t *testing.T) {
	e := newEnv(t, a2a.Options{}, nil)
	c := e.client(t, "slow", "")
	ctx := swarmtest.Context(t)
	res, err := c.SendMessage(ctx, &sdk.SendMessageRequest{Message: text("go"), Config: &sdk.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*sdk.Task)
	if task.Status.State != sdk.TaskStateWorking {
		t.Fatalf("task = %+v", task)
	}
	got := make(chan []sdk.Event, 1)
	subscribed := make(chan struct{})
	go func() {
		var evs []sdk.Event
		for ev, err := range c.SubscribeToTask(ctx, &sdk.SubscribeToTaskRequest{ID: task.ID}) {
			if err != nil {
				t.Errorf("subscription: %v", err)
				break
			}
			if len(evs) == 0 {
				close(subscribed)
			}
			evs = append(evs, ev)
		}
		got <- evs
	}()
	swarmtest.Recv(t, ctx, subscribed, "the subscription")
	canceled, err := c.CancelTask(ctx, &sdk.CancelTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	if canceled.Status.State != sdk.TaskStateCanceled {
		t.Fatalf("canceled = %+v", canceled)
	}
	if k := kinds(<-got); k != "task:TASK_STATE_WORKING status:TASK_STATE_CANCELED" {
		t.Errorf("subscription = %s", k)
	}
	swarmtest.AssertState(t, e.rt, string(task.ID), swarm.StateStopped)
	// Canceling again returns the canceled task.
	if again, err := c.CancelTask(ctx, &sdk.CancelTaskRequest{ID: task.ID}); err != nil || again.Status.State != sdk.TaskStateCanceled {
		t.Errorf("cancel again = %+v, %v", again, err)
	}
	_, err = c.CancelTask(ctx, &sdk.CancelTaskRequest{ID: "nope"})
	wantErr(t, err, sdk.ErrTaskNotFound)

	// A finished task cannot be canceled; a paused one can.
	done := send(t, e.client(t, "echo", ""), text("hi"))
	_, err = e.client(t, "echo", "").CancelTask(ctx, &sdk.CancelTaskRequest{ID: done.ID})
	wantErr(t, err, sdk.ErrTaskNotCancelable)
	ac := e.client(t, "approver", "")
	paused := send(t, ac, text("buy"))
	if got, err := ac.CancelTask(ctx, &sdk.CancelTaskRequest{ID: paused.ID}); err != nil || got.Status.State != sdk.TaskStateCanceled {
		t.Errorf("cancel paused = %+v, %v", got, err)
	}
	failed := send(t, e.client(t, "failer", ""), text("try"))
	if failed.Status.State != sdk.TaskStateFailed || statusText(failed) != "no luck" {
		t.Errorf("failed = %+v", failed)
	}
}

func TestUnsupported(t *testing.T) {
	e := newEnv(t, a2a.Options{}, nil)
	c := e.client(t, "echo", "")
	ctx := swarmtest.Context(t)
	_, err := c.GetTaskPushConfig(ctx, &sdk.GetTaskPushConfigRequest{TaskID: "x", ID: "y"})
	wantErr(t, err, sdk.ErrPushNotificationNotSupported)
	_, err = c.GetExtendedAgentCard(ctx, &sdk.GetExtendedAgentCardRequest{})
	if err == nil {
		t.Error("extended card: want an error")
	}
}

func TestAuth(t *testing.T) {
	a, err := auth.New([]auth.Token{
		{Name: "echoer", Secret: "echo-token", Swarms: []string{"echo"}},
		{Name: "planner", Secret: "plan-token", Swarms: []string{"planner"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	rpc := `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`
	check := func(e *env, token string, want int) {
		t.Helper()
		req, _ := http.NewRequest("POST", e.srv.URL+"/a2a/echo", strings.NewReader(rpc))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("token %q: status %d, want %d (%s)", token, resp.StatusCode, want, body)
		}
		if want == 401 && resp.Header.Get("WWW-Authenticate") == "" {
			t.Error("401 without WWW-Authenticate")
		}
		if strings.Contains(string(body), "echo-token") || strings.Contains(string(body), "plan-token") {
			t.Errorf("a secret in the response: %s", body)
		}
	}
	// The handler authenticates by itself, or behind the shared middleware.
	for name, e := range map[string]*env{
		"own":        newEnv(t, a2a.Options{Auth: a}, nil),
		"middleware": newEnv(t, a2a.Options{Auth: a}, a.Middleware),
	} {
		t.Run(name, func(t *testing.T) {
			check(e, "", 401)
			check(e, "wrong", 401)
			check(e, "plan-token", 403)
			check(e, "echo-token", 200)
			// Through the SDK client.
			if name == "own" { // behind the middleware, the card needs a token too
				bad := e.client(t, "echo", "plan-token")
				if _, err := bad.SendMessage(swarmtest.Context(t), &sdk.SendMessageRequest{Message: text("hi")}); err == nil || !strings.Contains(err.Error(), "403") {
					t.Errorf("forbidden send: %v", err)
				}
			}
			good := e.client(t, "echo", "echo-token")
			if task := send(t, good, text("hi")); task.Status.State != sdk.TaskStateCompleted {
				t.Errorf("allowed send: %+v", task)
			}
			if n := len(swarmtest.Events(t, e.rt, string(send(t, good, text("x")).ID))); n == 0 {
				t.Error("no run")
			}
		})
	}
}

// rawRPC posts body to path and returns the status and the decoded
// JSON-RPC error code (0 when none).
func rawRPC(t *testing.T, url, body string) (int, int) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var r struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if resp.Header.Get("Content-Type") == "text/event-stream" {
		// A streaming method answers errors as an event.
		line, _, _ := strings.Cut(strings.SplitN(string(data), "data: ", 2)[1], "\n")
		data = []byte(line)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("response %q: %v", data, err)
	}
	if r.Error == nil {
		return resp.StatusCode, 0
	}
	return resp.StatusCode, r.Error.Code
}

func TestBadInput(t *testing.T) {
	base := runtime.NumGoroutine()
	func() {
		e := newEnv(t, a2a.Options{MaxBodyBytes: 4096}, nil)
		url := e.srv.URL + "/a2a/echo"
		for _, tc := range []struct {
			name, body   string
			status, code int
		}{
			{"malformed JSON", `{"jsonrpc":`, 200, -32700},
			{"not JSON-RPC 2.0", `{"jsonrpc":"1.0","id":1,"method":"GetTask"}`, 200, -32600},
			{"bad id", `{"jsonrpc":"2.0","id":{},"method":"GetTask"}`, 200, -32600},
			{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"Explode","params":{}}`, 200, -32601},
			{"params of the wrong type", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":5}}`, 200, -32602},
			{"unknown task", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"nope"}}`, 200, -32001},
			{"empty task id", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{}}`, 200, -32602},
			{"no message", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}`, 200, -32602},
			{"no parts", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}`, 200, -32602},
			{"agent role", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"x"}]}}}`, 200, -32602},
			{"null part", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[null]}}}`, 200, -32602},
			{"empty part", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{}]}}}`, 200, -32700},
			{"streaming, unknown task", `{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"nope"}}`, 200, -32001},
			{"streaming, malformed params", `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":[1]}`, 200, -32602},
			{"cancel unknown", `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"nope"}}`, 200, -32001},
			{"too large", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"` + strings.Repeat("x", 5000) + `"}}`, 413, -32600},
		} {
			status, code := rawRPC(t, url, tc.body)
			if status != tc.status || code != tc.code {
				t.Errorf("%s: status %d code %d, want %d %d", tc.name, status, code, tc.status, tc.code)
			}
		}
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 405 {
			t.Errorf("GET on the endpoint = %d", resp.StatusCode)
		}
		if status, _ := rawRPC(t, e.srv.URL+"/a2a/nope", `{}`); status != 404 {
			t.Errorf("unknown swarm: %d", status)
		}

		// Clients that go away mid-stream leave nothing behind.
		c := e.client(t, "slow", "")
		for range 5 {
			ctx, cancel := context.WithCancel(swarmtest.Context(t))
			for range c.SendStreamingMessage(ctx, &sdk.SendMessageRequest{Message: text("go")}) {
				cancel() // after the first event
			}
			cancel()
		}
		list, err := c.ListTasks(swarmtest.Context(t), &sdk.ListTasksRequest{Status: sdk.TaskStateWorking})
		if err != nil || list.TotalSize != 5 {
			t.Fatalf("working tasks = %+v, %v", list, err)
		}
		for _, task := range list.Tasks {
			if _, err := c.CancelTask(swarmtest.Context(t), &sdk.CancelTaskRequest{ID: task.ID}); err != nil {
				t.Error(err)
			}
		}
		e.srv.Close()
		http.DefaultClient.CloseIdleConnections()
		_ = e.rt.Close()
	}()
	waitGoroutines(t, base)
}

// waitGoroutines fails the test unless the goroutine count comes back to
// base.
func waitGoroutines(t *testing.T, base int) {
	t.Helper()
	var n int
	for range 200 {
		if n = runtime.NumGoroutine(); n <= base {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	buf := make([]byte, 1<<20)
	t.Fatalf("%d goroutines, %d before:\n%s", n, base, buf[:runtime.Stack(buf, true)])
}

// TestFollowUpNamesPause: an input-required task's status message names
// its pause (metadata "pause"); a follow-up that names another pause is
// refused and applies nothing, one that names the current pause resumes.
func TestFollowUpNamesPause(t *testing.T) {
	e := newEnv(t, a2a.Options{}, nil)
	c := e.client(t, "approver", "")
	task := send(t, c, text("buy it"))
	if task.Status.State != sdk.TaskStateInputRequired || task.Status.Message == nil {
		t.Fatalf("task = %+v", task)
	}
	st, err := e.rt.Status(context.Background(), string(task.ID))
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := task.Status.Message.Metadata[a2a.MetaPause].(float64); !ok || int64(p) != st.Pause || st.Pause == 0 {
		t.Fatalf("status message metadata %v, pause %d", task.Status.Message.Metadata, st.Pause)
	}
	stale := text("late")
	stale.TaskID, stale.Metadata = task.ID, map[string]any{a2a.MetaPause: st.Pause + 1}
	_, err = c.SendMessage(context.Background(), &sdk.SendMessageRequest{Message: stale})
	wantErr(t, err, sdk.ErrUnsupportedOperation)
	swarmtest.AssertState(t, e.rt, string(task.ID), swarm.StatePaused)
	follow := text("yes")
	follow.TaskID, follow.Metadata = task.ID, map[string]any{a2a.MetaPause: st.Pause}
	if done := send(t, c, follow); done.Status.State != sdk.TaskStateCompleted {
		t.Fatalf("after the follow-up: %+v", done)
	}
}

// TestBodyLimitBehindServer: mounted in the server, whose own body limit
// reads first, an oversized JSON-RPC body still gets 413, not a parse error.
func TestBodyLimitBehindServer(t *testing.T) {
	rt, _ := swarmtest.NewRuntime(t, script, defs()...)
	h, err := a2a.NewHandler(rt, a2a.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(rt, server.Options{Mounts: []server.Mount{{Pattern: a2a.PathPrefix, Handler: h, Public: true}}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	body := `{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"pad": "` + strings.Repeat("x", 1<<20) + `"}}`
	res, err := http.Post(ts.URL+a2a.PathPrefix+"echo/", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized body: %d %s", res.StatusCode, b)
	}
}
