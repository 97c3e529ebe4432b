package openai_test

import (
	"context"
	"fmt"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/modeltest"
	"github.com/swarmrt/swarm/model/openai"
)

// A model on any OpenAI-compatible server (here a fake one), streaming.
func ExampleNew() {
	srv := modeltest.NewServer(modeltest.OpenAIChat, func(*modeltest.Call) (modeltest.Reply, modeltest.Fault) {
		return modeltest.Reply{Text: "Sunny, 22C.", Usage: model.Usage{InputTokens: 12, OutputTokens: 4}}, modeltest.Fault{}
	})
	defer srv.Close()
	m, err := openai.New(openai.WithBaseURL(srv.URL), openai.WithModel("llama3.2"), openai.WithProvider("ollama"))
	if err != nil {
		panic(err)
	}
	resp, err := m.Generate(context.Background(), &model.Request{
		Messages: []model.Message{{Role: model.RoleUser, Content: "Weather?"}},
		OnDelta:  func(d model.Delta) { fmt.Printf("delta %q\n", d.Text) },
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Message.Content, resp.Usage.InputTokens, resp.Usage.OutputTokens)
	// Output:
	// delta "Sunny, 2"
	// delta "2C."
	// Sunny, 22C. 12 4
}

// Naming a compatible endpoint makes it usable in model specs.
func ExampleRegisterCompatible() {
	err := openai.RegisterCompatible("mybox", openai.Endpoint{BaseURL: "http://localhost:9999/v1", KeyOptional: true})
	fmt.Println(err)
	m, err := model.Open("mybox:qwen2.5")
	fmt.Println(m != nil, err)
	// Output:
	// <nil>
	// true <nil>
}
