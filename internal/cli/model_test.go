package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "swarm.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const noModelFile = `version: 1
swarms:
  hello:
    description: Says hello
    instructions: Say hello.
`

func clearKeys(t *testing.T) {
	for _, k := range []string{"SWARM_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"} {
		t.Setenv(k, "")
	}
}

// With no model and no key, the CLI says exactly what to set.
func TestNoModelSaysWhatToSet(t *testing.T) {
	clearKeys(t)
	var out, errOut bytes.Buffer
	code := Main([]string{"--file", writeFile(t, noModelFile), "--store", "memory:", "run", "hello", "hi"}, strings.NewReader(""), &out, &errOut)
	if code != ExitUsage {
		t.Errorf("exit code %d, want %d (stderr %q)", code, ExitUsage, errOut.String())
	}
	if !strings.Contains(errOut.String(), noModelHint) {
		t.Errorf("stderr %q does not say what to set", errOut.String())
	}
}

// A key alone selects its vendor's default model; a model spec whose key is
// missing names the variable before any run starts.
func TestModelFromKeys(t *testing.T) {
	clearKeys(t)
	if got := defaultModelSpec(); got != "" {
		t.Errorf("default with no keys = %q", got)
	}
	t.Setenv("ANTHROPIC_API_KEY", "k")
	if got := defaultModelSpec(); got != defaultAnthropicModel {
		t.Errorf("default with an Anthropic key = %q", got)
	}
	t.Setenv("OPENAI_API_KEY", "k")
	if got := defaultModelSpec(); got != defaultOpenAIModel {
		t.Errorf("default with an OpenAI key = %q", got)
	}
	clearKeys(t)
	var out, errOut bytes.Buffer
	code := Main([]string{"--file", writeFile(t, noModelFile), "--store", "memory:", "--model", "groq:llama-3.3-70b-versatile", "run", "hello", "hi"}, strings.NewReader(""), &out, &errOut)
	if code != ExitUsage || !strings.Contains(errOut.String(), "set GROQ_API_KEY") {
		t.Errorf("exit %d, stderr %q: want a usage error naming GROQ_API_KEY", code, errOut.String())
	}
}
