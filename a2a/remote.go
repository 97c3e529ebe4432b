package a2a

import (
	"github.com/swarmrt/swarm/internal/traceprop"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/absorb"
	"github.com/swarmrt/swarm/auth"
)

// RemotePrefix starts the name of the tool [Remote] makes. (Tool names
// starting with handoff_to_ are reserved for the runtime's own handoffs.)
const RemotePrefix = "delegate_to_"

// RemoteOption configures [Remote].
type RemoteOption func(*remote)

// WithToken sends token as a bearer token with every request to the remote
// agent.
func WithToken(token string) RemoteOption { return func(r *remote) { r.token = token } }

// WithHTTPClient sets the HTTP client used to reach the remote agent
// (default: one without a timeout, bounded by the run's context).
func WithHTTPClient(c *http.Client) RemoteOption { return func(r *remote) { r.client = c } }

// WithRemoteDescription sets the tool's description, which tells the model
// when to delegate to the remote agent.
func WithRemoteDescription(d string) RemoteOption { return func(r *remote) { r.description = d } }

// WithOAuth sends the access tokens of c with every request to the remote
// agent: c discovers the agent's authorization server from its 401, gets
// tokens (client credentials) or refreshes a person's, and a delegation
// that needs a person's consent fails saying how to give it
// ([auth.ConsentError]).
func WithOAuth(c *auth.Client) RemoteOption { return func(r *remote) { r.oauth = c } }

// WithCardKeys makes the remote agent trusted only if its card is signed
// (A2A 1.0 signed agent cards) by one of keys, such as the set a server
// made with a [CardSigner] serves at [KeysPath], fetched once over a
// channel the caller trusts. A card that is unsigned, or whose signatures
// do not verify, is refused: the call fails with an error wrapping
// [ErrCardSignature], and no message is sent.
func WithCardKeys(keys jose.JSONWebKeySet) RemoteOption {
	return func(r *remote) { r.keys = &keys }
}

// WithPollInterval sets how often a remote task that is still working
// after SendMessage returned is polled (default 500ms).
func WithPollInterval(d time.Duration) RemoteOption { return func(r *remote) { r.poll = d } }

// Remote returns a tool, named RemotePrefix + name, that delegates to the
// remote A2A agent whose card is at cardURL: either the card's own URL
// (ending in .json) or the agent's base URL, to which
// /.well-known/agent-card.json is appended. Like a handoff, the tool takes
// one string argument, request, which it sends to the agent as a message;
// it follows the remote task until it ends and returns the remote result
// (text parts as text, data parts as JSON). A failed, canceled or rejected
// task, or one that needs input, is an error result that says so, with the
// remote agent's own message.
//
// The message id is [swarm.IdempotencyKey], so a step repeated after a
// crash sends the same message again, which a server that deduplicates
// messages (as [NewHandler] does) answers with the task the first attempt
// started. The card is fetched at the first call, and again after a
// failure to reach the agent.
func Remote(name, cardURL string, opts ...RemoteOption) (swarm.Tool, error) {
	if name == "" || !toolName.MatchString(RemotePrefix+name) {
		return nil, fmt.Errorf("a2a: remote agent %q: a name may contain only letters, digits, '_' and '-', and %s<name> at most 64 characters", name, RemotePrefix)
	}
	u, err := url.Parse(cardURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("a2a: remote agent %s: card URL %q: want an http or https URL", name, cardURL)
	}
	r := &remote{name: name, cardURL: cardURL, poll: 500 * time.Millisecond}
	for _, o := range opts {
		o(r)
	}
	if r.description == "" {
		r.description = "Delegate a task to the remote agent " + name + " and get its answer."
	}
	if r.client == nil {
		r.client = &http.Client{}
	}
	c := *r.client
	c.Transport = traceprop.Transport(c.Transport)
	if r.oauth != nil {
		c.Transport = r.oauth.Transport(c.Transport)
	}
	if r.token != "" {
		c.Transport = &bearer{token: r.token, base: c.Transport}
	}
	r.client = &c
	if r.poll <= 0 {
		r.poll = 500 * time.Millisecond
	}
	return r, nil
}

type remote struct {
	name, cardURL, description, token string
	client                            *http.Client
	poll                              time.Duration
	keys                              *jose.JSONWebKeySet
	oauth                             *auth.Client

	mu  sync.Mutex
	cli *a2aclient.Client
}

// bearer adds a bearer token to requests.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b *bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(req)
}

var remoteParams = json.RawMessage(`{"type":"object","properties":{"request":{"type":"string","description":"What the agent should do, with all the context it needs."}},"required":["request"],"additionalProperties":false}`)

func (r *remote) Name() string            { return RemotePrefix + r.name }
func (r *remote) Description() string     { return r.description }
func (r *remote) Schema() json.RawMessage { return remoteParams }

// connect returns the client of the remote agent, fetching its card once.
func (r *remote) connect(ctx context.Context) (*a2aclient.Client, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cli != nil {
		return r.cli, nil
	}
	var card *sdk.AgentCard
	var err error
	if r.keys != nil {
		card, err = r.verifiedCard(ctx)
	} else {
		base, opts := r.cardURL, []agentcard.ResolveOption(nil)
		if strings.HasSuffix(strings.TrimSuffix(base, "/"), ".json") {
			opts = append(opts, agentcard.WithPath(""))
		}
		card, err = agentcard.NewResolver(r.client).Resolve(ctx, base, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("fetch the agent card from %s: %w", r.cardURL, err)
	}
	cli, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(r.client))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", r.cardURL, err)
	}
	r.cli = cli
	return cli, nil
}

// maxCardBytes bounds an agent card read for verification.
const maxCardBytes = 1 << 20

// verifiedCard fetches the card and checks its signatures with r.keys.
func (r *remote) verifiedCard(ctx context.Context) (*sdk.AgentCard, error) {
	u := r.cardURL
	if !strings.HasSuffix(strings.TrimSuffix(u, "/"), ".json") {
		u = strings.TrimSuffix(u, "/") + CardPath
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	res, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxCardBytes+1))
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %d", u, res.StatusCode)
	}
	if len(raw) > maxCardBytes {
		return nil, fmt.Errorf("GET %s: the card exceeds %d bytes", u, maxCardBytes)
	}
	if err := VerifyCard(raw, *r.keys); err != nil {
		return nil, err
	}
	var card sdk.AgentCard
	if err := json.Unmarshal(raw, &card); err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	return &card, nil
}

// forget drops the client after a failure to reach the agent, so that the
// next call fetches the card again.
func (r *remote) forget(cli *a2aclient.Client) {
	r.mu.Lock()
	if r.cli == cli {
		r.cli = nil
		_ = cli.Destroy()
	}
	r.mu.Unlock()
}

// Call sends the request to the remote agent and returns its result.
func (r *remote) Call(ctx context.Context, args json.RawMessage) (string, error) {
	var in struct {
		Request string `json:"request"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return "", &swarm.ArgumentError{Tool: r.Name(), Err: err}
	}
	if strings.TrimSpace(in.Request) == "" {
		return "", &swarm.ArgumentError{Tool: r.Name(), Err: errors.New("request is empty")}
	}
	cli, err := r.connect(ctx)
	if err != nil {
		return "", fmt.Errorf("remote agent %s: %w", r.name, err)
	}
	msg := sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart(in.Request))
	if key := swarm.IdempotencyKey(ctx); key != "" {
		msg.ID = key
	}
	res, err := cli.SendMessage(ctx, &sdk.SendMessageRequest{Message: msg})
	if err != nil {
		var a2aErr *sdk.Error
		if !errors.As(err, &a2aErr) {
			r.forget(cli) // a transport failure: look the agent up again next time
		}
		return "", fmt.Errorf("remote agent %s: send: %w", r.name, err)
	}
	switch v := res.(type) {
	case *sdk.Message:
		return partsText(v.Parts), nil
	case *sdk.Task:
		return r.finish(ctx, cli, v)
	}
	return "", fmt.Errorf("remote agent %s: unexpected response %T", r.name, res)
}

// finish follows a remote task until it needs input or ends.
func (r *remote) finish(ctx context.Context, cli *a2aclient.Client, t *sdk.Task) (string, error) {
	for !t.Status.State.Terminal() && t.Status.State != sdk.TaskStateInputRequired && t.Status.State != sdk.TaskStateAuthRequired {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(r.poll):
		}
		next, err := cli.GetTask(ctx, &sdk.GetTaskRequest{ID: t.ID})
		if err != nil {
			return "", fmt.Errorf("remote agent %s: task %s: %w", r.name, t.ID, err)
		}
		t = next
	}
	said := ""
	if t.Status.Message != nil {
		said = partsText(t.Status.Message.Parts)
	}
	switch t.Status.State {
	case sdk.TaskStateCompleted:
		var parts sdk.ContentParts
		for _, a := range t.Artifacts {
			parts = append(parts, a.Parts...)
		}
		if len(parts) == 0 {
			return said, nil
		}
		return partsText(parts), nil
	case sdk.TaskStateInputRequired:
		return "", fmt.Errorf("remote agent %s needs input to continue task %s, which this delegation cannot give; it asked: %s", r.name, t.ID, orNone(said))
	case sdk.TaskStateAuthRequired:
		return "", fmt.Errorf("remote agent %s requires authentication for task %s: %s", r.name, t.ID, orNone(said))
	}
	return "", fmt.Errorf("remote agent %s: task %s ended %s: %s", r.name, t.ID, strings.ToLower(strings.TrimPrefix(string(t.Status.State), "TASK_STATE_")), orNone(said))
}

func orNone(s string) string {
	if s == "" {
		return "(no message)"
	}
	return s
}

// partsText renders parts as text: text parts as they are, data parts as
// JSON, one part per line.
func partsText(parts sdk.ContentParts) string {
	return messageText(&sdk.Message{Parts: parts})
}

// toolName is the runtime's rule for tool names.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Sibling returns the remote A2A agent at cardURL (see [Remote]) as an
// agent a captain can absorb ([absorb.Into]) like a local one: the
// captain gets a tool named name, taking one string argument, request,
// described by description, and every call sends the request to the remote
// agent, which runs in its own process. The agent has one skill, performed
// by the [Remote] tool; it is meant to be absorbed, not handed off to.
func Sibling(name, description, cardURL string, opts ...RemoteOption) (absorb.Sibling, error) {
	t, err := Remote(name, cardURL, opts...)
	if err != nil {
		return absorb.Sibling{}, err
	}
	return absorb.Sibling{Agent: &swarm.Agent{Name: name, Description: description}, Skills: []absorb.Skill{{Name: name, Remote: t}}}, nil
}
