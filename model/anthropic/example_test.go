package anthropic_test

import (
	"context"
	"fmt"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/anthropic"
	"github.com/swarmrt/swarm/model/modeltest"
)

func ExampleNew() {
	srv := modeltest.NewServer(modeltest.Anthropic, func(*modeltest.Call) (modeltest.Reply, modeltest.Fault) {
		return modeltest.Reply{Text: "Hello!", Usage: model.Usage{InputTokens: 30, CachedInputTokens: 20, CacheWriteTokens: 5, OutputTokens: 2}}, modeltest.Fault{}
	})
	defer srv.Close()
	m, err := anthropic.New(anthropic.WithBaseURL(srv.URL), anthropic.WithAPIKey("sk-ant-example"), anthropic.WithModel("claude-sonnet-4-5"))
	if err != nil {
		panic(err)
	}
	resp, err := m.Generate(context.Background(), &model.Request{System: "Be brief.", Messages: []model.Message{{Role: model.RoleUser, Content: "Hi"}}})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s %+v\n", resp.Message.Content, resp.Usage)
	// Output: Hello! {InputTokens:30 OutputTokens:2 CachedInputTokens:20 ReasoningTokens:0 CacheWriteTokens:5 Calls:1 Cost:0}
}
