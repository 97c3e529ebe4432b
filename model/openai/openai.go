// Package openai is the [model.Model] provider for OpenAI and every server
// that speaks OpenAI's Chat Completions API (Ollama, vLLM, llama.cpp's
// server, LM Studio, OpenRouter, Groq, Gemini's OpenAI-compatible endpoint
// and any other), built on the official SDK github.com/openai/openai-go.
//
// Importing the package registers these providers with [model.Register]:
//
//	openai:gpt-4.1-mini            OpenAI Chat Completions (OPENAI_API_KEY, OPENAI_BASE_URL)
//	openai-responses:gpt-4.1-mini  OpenAI Responses API
//	ollama:llama3.2                http://localhost:11434/v1 (OLLAMA_BASE_URL; no key)
//	vllm:MODEL                     http://localhost:8000/v1 (VLLM_BASE_URL; VLLM_API_KEY optional)
//	llamacpp:MODEL                 http://localhost:8080/v1 (LLAMACPP_BASE_URL; LLAMACPP_API_KEY optional)
//	lmstudio:MODEL                 http://localhost:1234/v1 (LMSTUDIO_BASE_URL; no key)
//	openrouter:openai/gpt-4.1-mini https://openrouter.ai/api/v1 (OPENROUTER_API_KEY)
//	groq:llama-3.3-70b-versatile   https://api.groq.com/openai/v1 (GROQ_API_KEY)
//	gemini:gemini-2.5-flash        https://generativelanguage.googleapis.com/v1beta/openai (GEMINI_API_KEY)
//
// [RegisterCompatible] adds a named endpoint of your own; [New] builds a
// model directly.
//
// The SDK's own retries are off: a failure is returned at once as a
// classified [*model.Error] and the swarm runtime's retry policy decides.
// Each call is bounded by its context's deadline.
package openai

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/internal/httpclient"
)

// API selects the OpenAI API a model calls.
type API string

// The APIs a model can call.
const (
	// Chat is the Chat Completions API, spoken by every compatible server.
	Chat API = "chat"
	// Responses is OpenAI's Responses API.
	Responses API = "responses"
)

// Endpoint describes an OpenAI-compatible server.
type Endpoint struct {
	// BaseURL is the API's base URL, such as "http://localhost:11434/v1".
	BaseURL string
	// BaseURLEnv names an environment variable that overrides BaseURL when
	// set, such as "OPENAI_BASE_URL".
	BaseURLEnv string
	// APIKeyEnv names the environment variable holding the API key, such as
	// "OPENAI_API_KEY".
	APIKeyEnv string
	// KeyOptional lets the key's variable be unset (local servers): no
	// Authorization header is sent then.
	KeyOptional bool
	// Headers are sent with every request.
	Headers map[string]string
	// StructuredOutput sends the swarm's result schema as a json_schema
	// response_format. Not every compatible server supports it.
	StructuredOutput bool
	// API is the API to call (default [Chat]).
	API API
}

// Builtin endpoints, registered as providers under their map key.
var builtins = map[string]Endpoint{
	"openai":           {BaseURL: "https://api.openai.com/v1", BaseURLEnv: "OPENAI_BASE_URL", APIKeyEnv: "OPENAI_API_KEY", StructuredOutput: true},
	"openai-responses": {BaseURL: "https://api.openai.com/v1", BaseURLEnv: "OPENAI_BASE_URL", APIKeyEnv: "OPENAI_API_KEY", StructuredOutput: true, API: Responses},
	"ollama":           {BaseURL: "http://localhost:11434/v1", BaseURLEnv: "OLLAMA_BASE_URL", KeyOptional: true},
	"vllm":             {BaseURL: "http://localhost:8000/v1", BaseURLEnv: "VLLM_BASE_URL", APIKeyEnv: "VLLM_API_KEY", KeyOptional: true},
	"llamacpp":         {BaseURL: "http://localhost:8080/v1", BaseURLEnv: "LLAMACPP_BASE_URL", APIKeyEnv: "LLAMACPP_API_KEY", KeyOptional: true},
	"lmstudio":         {BaseURL: "http://localhost:1234/v1", BaseURLEnv: "LMSTUDIO_BASE_URL", KeyOptional: true},
	"openrouter":       {BaseURL: "https://openrouter.ai/api/v1", BaseURLEnv: "OPENROUTER_BASE_URL", APIKeyEnv: "OPENROUTER_API_KEY"},
	"groq":             {BaseURL: "https://api.groq.com/openai/v1", BaseURLEnv: "GROQ_BASE_URL", APIKeyEnv: "GROQ_API_KEY"},
	"gemini":           {BaseURL: "https://generativelanguage.googleapis.com/v1beta/openai", BaseURLEnv: "GEMINI_BASE_URL", APIKeyEnv: "GEMINI_API_KEY"},
}

func init() {
	names := make([]string, 0, len(builtins))
	for name := range builtins {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		register(name, builtins[name])
	}
}

var (
	regMu      sync.Mutex
	registered = map[string]Endpoint{}
)

func register(name string, ep Endpoint) {
	registered[name] = ep
	model.Register(name, func(modelName string) (model.Model, error) {
		return Open(name, ep, modelName)
	})
}

// RegisterCompatible registers the OpenAI-compatible endpoint ep as the
// model provider name, so that the spec "name:MODEL" opens MODEL on it. It
// fails if name is taken by another provider; registering the same endpoint
// under the same name again does nothing.
func RegisterCompatible(name string, ep Endpoint) error {
	if name == "" || strings.ContainsAny(name, ": ") {
		return fmt.Errorf("openai: invalid provider name %q", name)
	}
	if ep.BaseURL == "" && ep.BaseURLEnv == "" {
		return fmt.Errorf("openai: endpoint %q has no base URL", name)
	}
	regMu.Lock()
	defer regMu.Unlock()
	if prev, ok := registered[name]; ok {
		if equalEndpoints(prev, ep) {
			return nil
		}
		return fmt.Errorf("openai: provider %q is already registered with another endpoint", name)
	}
	if slices.Contains(model.Providers(), name) {
		return fmt.Errorf("openai: provider %q is already registered", name)
	}
	register(name, ep)
	return nil
}

func equalEndpoints(a, b Endpoint) bool { return reflect.DeepEqual(a, b) }

// Open returns a model on endpoint ep, reading its base URL and key from
// the environment as ep says. provider names the endpoint in errors and
// model specs. A key that ep requires but the environment lacks is an
// error naming the variable to set.
func Open(provider string, ep Endpoint, modelName string) (*Model, error) {
	if modelName == "" {
		return nil, fmt.Errorf("%s: missing model name (use a spec such as %q)", provider, provider+":MODEL")
	}
	base := ep.BaseURL
	if ep.BaseURLEnv != "" {
		if v := os.Getenv(ep.BaseURLEnv); v != "" {
			base = v
		}
	}
	if base == "" {
		return nil, fmt.Errorf("%s: no base URL: set %s", provider, ep.BaseURLEnv)
	}
	opts := []Option{WithProvider(provider), WithModel(modelName), WithBaseURL(base), WithStructuredOutput(ep.StructuredOutput), WithAPI(ep.API)}
	if ep.APIKeyEnv != "" {
		key := os.Getenv(ep.APIKeyEnv)
		if key == "" && !ep.KeyOptional {
			return nil, fmt.Errorf("%s: no API key: set %s", provider, ep.APIKeyEnv)
		}
		opts = append(opts, WithAPIKey(key))
	}
	for k, v := range ep.Headers {
		opts = append(opts, WithHeader(k, os.ExpandEnv(v)))
	}
	return New(opts...)
}

// Option configures a [Model] built by [New].
type Option func(*config)

type config struct {
	provider    string
	model       string
	baseURL     string
	apiKey      string
	headers     [][2]string
	client      *http.Client
	structured  bool
	api         API
	maxTokens   int64
	agentHeader bool
	embedModel  string
}

// WithEmbeddingModel sets the model [Model.Embed] asks for (default
// DefaultEmbeddingModel).
func WithEmbeddingModel(name string) Option { return func(c *config) { c.embedModel = name } }

// DefaultEmbeddingModel is the embedding model used when none is set.
const DefaultEmbeddingModel = "text-embedding-3-small"

// WithProvider sets the provider name used in errors (default "openai").
func WithProvider(name string) Option { return func(c *config) { c.provider = name } }

// WithModel sets the model name used when a request names none.
func WithModel(name string) Option { return func(c *config) { c.model = name } }

// WithBaseURL sets the API's base URL (default https://api.openai.com/v1).
func WithBaseURL(url string) Option { return func(c *config) { c.baseURL = url } }

// WithAPIKey sets the API key sent as a bearer token; empty sends none.
func WithAPIKey(key string) Option { return func(c *config) { c.apiKey = key } }

// WithHeader adds a header to every request.
func WithHeader(key, value string) Option {
	return func(c *config) { c.headers = append(c.headers, [2]string{key, value}) }
}

// WithHTTPClient sets the HTTP client (default: a client with its own
// connection pool and no timeout of its own; each call's context bounds it).
func WithHTTPClient(client *http.Client) Option { return func(c *config) { c.client = client } }

// WithStructuredOutput turns on or off sending the request's result schema
// as a JSON-schema response format (on by default for OpenAI; off for
// compatible servers, which may not support it).
func WithStructuredOutput(on bool) Option { return func(c *config) { c.structured = on } }

// WithAPI selects the Chat Completions or the Responses API ("" is Chat).
func WithAPI(api API) Option { return func(c *config) { c.api = api } }

// WithMaxTokens bounds the output tokens of each call (default: the
// server's default).
func WithMaxTokens(n int64) Option { return func(c *config) { c.maxTokens = n } }

// WithAgentHeader sends the calling agent's id and the run's id in the
// X-Swarm-Agent and X-Swarm-Run headers, which lets a proxy or a fake server
// (swarmtest.NewOpenAIServer) tell agents apart.
func WithAgentHeader() Option { return func(c *config) { c.agentHeader = true } }

// Model is an OpenAI (or compatible) model. It is safe for concurrent use.
type Model struct {
	provider    string
	name        string
	structured  bool
	api         API
	maxTokens   int64
	agentHeader bool
	chat        openai.ChatCompletionService // streams the bodies chatBody encodes
	// client, chatURL and header send the bodies of calls that do not
	// stream (postChat).
	client     *http.Client
	chatURL    string
	header     http.Header
	responses  responses.ResponseService
	embeddings openai.EmbeddingService
	embedModel string
	// blobs caches the base64 of loaded blob parts by hash: a run sends
	// the same image with every call.
	blobs encodedBlobs
}

// New returns a model with the given options. Without [WithAPIKey] it
// sends no key; without [WithBaseURL] it calls OpenAI. It reads no
// environment variables: [Open] and model specs do.
func New(opts ...Option) (*Model, error) {
	c := config{provider: "openai", baseURL: "https://api.openai.com/v1", structured: true}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	switch c.api {
	case "":
		c.api = Chat
	case Chat, Responses:
	default:
		return nil, fmt.Errorf("%s: unknown API %q (want %q or %q)", c.provider, c.api, Chat, Responses)
	}
	if c.client == nil {
		c.client = httpclient.Default()
	}
	base := c.baseURL
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	ro := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithHTTPClient(c.client),
		option.WithMaxRetries(0),
	}
	if c.apiKey != "" {
		ro = append(ro, option.WithAPIKey(c.apiKey))
	}
	for _, h := range c.headers {
		ro = append(ro, option.WithHeader(h[0], h[1]))
	}
	header := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}
	if c.apiKey != "" {
		header.Set("Authorization", "Bearer "+c.apiKey)
	}
	for _, h := range c.headers {
		header.Set(h[0], h[1])
	}
	m := &Model{provider: c.provider, name: c.model, structured: c.structured, api: c.api, maxTokens: c.maxTokens, agentHeader: c.agentHeader,
		embeddings: openai.NewEmbeddingService(ro...), embedModel: cmp.Or(c.embedModel, DefaultEmbeddingModel),
		client: c.client, chatURL: base + "chat/completions", header: header}
	if c.api == Responses {
		m.responses = responses.NewResponseService(ro...)
	} else {
		m.chat = openai.NewChatCompletionService(ro...)
	}
	return m, nil
}

// Provider returns the provider name the model reports in errors.
func (m *Model) Provider() string { return m.provider }

// Name returns the model's default model name.
func (m *Model) Name() string { return m.name }

// schemaObject returns the result schema when structured output applies:
// it is on and the schema describes a JSON object (OpenAI requires one at
// the root).
func (m *Model) schemaObject(schema json.RawMessage) map[string]any {
	if !m.structured || len(schema) == 0 {
		return nil
	}
	var obj map[string]any
	if json.Unmarshal(schema, &obj) != nil || obj["type"] != "object" {
		return nil
	}
	return obj
}

// params decodes a tool's parameters schema, caching the result: tool
// definitions repeat on every call of a run.
func params(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	key := string(raw)
	if v, ok := paramCache.Load(key); ok {
		return v.(map[string]any), nil
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("tool parameters are not a JSON object: %w", err)
	}
	if paramCount.Add(1) <= maxCachedParams {
		paramCache.Store(key, obj)
	}
	return obj, nil
}

const maxCachedParams = 4096

var (
	paramCache sync.Map
	paramCount atomic.Int64
)

func (m *Model) modelName(req *model.Request) string {
	if req.Model != "" {
		return req.Model
	}
	return m.name
}

func (m *Model) badRequest(name, msg string) error {
	return &model.Error{Kind: model.KindBadRequest, Provider: m.provider, Model: name, Message: msg}
}

var errNilRequest = errors.New("nil request")
