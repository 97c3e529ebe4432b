package config_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/config"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
)

func TestModelsSection(t *testing.T) {
	srv := swarmtest.NewOpenAIServer(t, scripted.Script{"any": {scripted.Text("hello from myllm")}})
	t.Setenv("MYLLM_TEAM", "blue")
	f, err := config.Parse([]byte(`version: 1
model: myllm:small-model
models:
  myllm:
    base_url: `+srv.URL+`
    headers: {X-Team: "${MYLLM_TEAM}"}
    prices:
      small-model: {input: 0.2, output: 0.6}
prices:
  openai:gpt-4.1-nano: {input: 0.1, cached_input: 0.025, output: 0.4}
`), "")
	if err != nil {
		t.Fatal(err)
	}
	m, err := f.OpenModel(f.Model)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Generate(context.Background(), &model.Request{Agent: "any", Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "hello from myllm" {
		t.Errorf("content = %q", resp.Message.Content)
	}
	calls := srv.Calls()
	if len(calls) != 1 || calls[0].Model != "small-model" || calls[0].Header.Get("X-Team") != "blue" || calls[0].Header.Get("Authorization") != "" {
		t.Errorf("request: model %q, X-Team %q, Authorization %q", calls[0].Model, calls[0].Header.Get("X-Team"), calls[0].Header.Get("Authorization"))
	}
	f.ApplyPrices()
	if p, ok := model.LookupPrice("myllm:small-model"); !ok || p.Output != 0.6 {
		t.Errorf("price of myllm:small-model = %+v, %v", p, ok)
	}
	if _, err := f.OpenModel("nosuch:x"); err == nil || !strings.Contains(err.Error(), "known:") {
		t.Errorf("unknown provider: %v", err)
	}
}

func TestModelsSectionMistakes(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"models:\n  myllm: {api_key_env: K}\n", "missing base_url"},
		{"models:\n  openai: {base_url: http://x}\n", "builtin provider"},
		{"models:\n  m: {base_url: http://x, colour: red}\n", "colour"},
		{"models:\n  m: {base_url: http://x, api: soap}\n", "api"},
		{"prices:\n  gpt-4: {input: 1}\n", "not a model spec"},
		{"prices:\n  openai:gpt-4: {input: -1}\n", "non-negative"},
	} {
		_, err := config.Parse([]byte("version: 1\n"+tc.yaml), "")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// TestCheckModels: the models a file uses are opened, a failure is an
// *Error at the line of the spec, and a default model nobody uses (or one
// replaced before the check) is not opened.
func TestCheckModels(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	f, err := config.Parse([]byte("version: 1\nmodel: openai:gpt-4.1-mini\nagents:\n  a:\n    instructions: a\n    model: martian:x\n"+
		"swarms:\n  s:\n    instructions: s\n    handoffs: [a]\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	err = f.CheckModels()
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Line != 2 || !strings.Contains(err.Error(), "OPENAI_API_KEY") ||
		!strings.Contains(err.Error(), "line 6: agent a: model") {
		t.Errorf("CheckModels: %v", err)
	}
	f.Model = "" // replaced, as --model does
	if err := f.CheckModels(); err == nil || strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("CheckModels after replacing the default: %v", err)
	}
	g, err := config.Parse([]byte("version: 1\nmodel: openai:gpt-4.1-mini\nswarms:\n  s:\n    instructions: s\n    model: scripted:nope.yaml\n"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := g.CheckModels(); err == nil || strings.Contains(err.Error(), "OPENAI_API_KEY") || !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("an unused default model was opened, or the script was not: %v", err)
	}
}

// TestScriptedPricesRelativePath prices a scripted model by the path its
// swarm.yaml names it with: relative to the file, as in model: specs. A
// price keyed by the relative path used to be stored under that text while
// runs looked prices up by the absolute path, so the price never applied.
func TestScriptedPricesRelativePath(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "script.yaml", "greet:\n  - text: hello\n    usage: {input_tokens: 1000000, output_tokens: 1000000}\n", 0o644)
	path := write(t, dir, "swarm.yaml", `version: 1
model: scripted:script.yaml
prices:
  scripted:script.yaml: {input: 2, output: 3}
swarms:
  greet:
    instructions: Say hello.
`, 0o644)
	f, rt := loadFile(t, path)
	f.ApplyPrices()
	var greet *swarm.Swarm[string, string]
	for _, d := range rt.Swarms() {
		if d.ID() == "greet" {
			greet, _ = d.(*swarm.Swarm[string, string])
		}
	}
	if greet == nil {
		t.Fatal("greet is not a *swarm.Swarm[string, string]")
	}
	ctx := ctxT(t)
	res, run, err := greet.Run(ctx, rt, "hi")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.(swarm.Completed[string]); !ok {
		t.Fatalf("result %#v", res)
	}
	st, err := rt.Status(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if st.Usage.Cost != 5 {
		t.Errorf("cost of 1M input and 1M output tokens at $2 and $3 per million = %v, want 5", st.Usage.Cost)
	}
}
