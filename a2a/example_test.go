package a2a_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/a2a"
	"github.com/swarmrt/swarm/model/scripted"
)

// Serve a swarm as an A2A agent and call it with the A2A SDK's client.
func ExampleNewHandler() {
	ctx := context.Background()
	greeter := swarm.Define[string, string]("greeter", "Greets people", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Greet {{.Input}}."}
	}).WithTags("greeting")
	rt, _ := swarm.New(swarm.Config{Model: scripted.New(scripted.Script{"greeter": {scripted.Text("Hello, Ada!")}})})
	defer rt.Close()
	_ = rt.Register(greeter)

	h, err := a2a.NewHandler(rt, a2a.Options{})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(h) // or mux.Handle(a2a.PathPrefix, h)
	defer srv.Close()

	card, _ := agentcard.DefaultResolver.Resolve(ctx, srv.URL+"/a2a/greeter")
	client, _ := a2aclient.NewFromCard(ctx, card)
	defer client.Destroy()
	res, err := client.SendMessage(ctx, &sdk.SendMessageRequest{
		Message: sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("Ada")),
	})
	if err != nil {
		panic(err)
	}
	task := res.(*sdk.Task)
	fmt.Println(card.Name, card.Skills[0].Tags)
	fmt.Println(task.Status.State, task.Artifacts[0].Parts[0].Text())
	// Output:
	// greeter [greeting]
	// TASK_STATE_COMPLETED Hello, Ada!
}

// Let a swarm delegate to a remote A2A agent.
func ExampleRemote() {
	research, err := a2a.Remote("research", "https://agents.example.com/a2a/researcher",
		a2a.WithToken("secret"), a2a.WithRemoteDescription("Finds sources on a topic"))
	if err != nil {
		panic(err)
	}
	writer := swarm.Define[string, string]("writer", "Writes reports", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Research, then write.", Tools: []swarm.Tool{research}}
	})
	_ = writer
	fmt.Println(research.Name())
	// Output: delegate_to_research
}
