package cli

import (
	"os"

	"github.com/swarmrt/swarm/config"
	"github.com/swarmrt/swarm/model"
	// The real providers register themselves: openai, openai-responses,
	// ollama, vllm, llamacpp, lmstudio, openrouter, groq, gemini, anthropic.
	_ "github.com/swarmrt/swarm/model/anthropic"
	_ "github.com/swarmrt/swarm/model/openai"
)

// Default models when only a vendor's key is set.
const (
	defaultOpenAIModel    = "openai:gpt-4.1-mini"
	defaultAnthropicModel = "anthropic:claude-sonnet-4-5"
)

// noModelHint says exactly what to set when no model is configured; it
// follows the error, which says that none is.
const noModelHint = "pass --model (e.g. --model openai:gpt-4.1-mini), set SWARM_MODEL, set model: in the file, or set OPENAI_API_KEY / ANTHROPIC_API_KEY"

// openModelIn opens spec with the endpoints of file's models: section, when
// there is a file.
func openModelIn(file *config.File, spec string) (model.Model, error) {
	if file != nil {
		return file.OpenModel(spec)
	}
	return model.Open(spec)
}

// defaultModelSpec is the model used when none is configured: OpenAI's
// when OPENAI_API_KEY is set, else Anthropic's when ANTHROPIC_API_KEY is,
// else none.
func defaultModelSpec() string {
	switch {
	case os.Getenv("OPENAI_API_KEY") != "":
		return defaultOpenAIModel
	case os.Getenv("ANTHROPIC_API_KEY") != "":
		return defaultAnthropicModel
	}
	return ""
}
