package swarmtest_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
)

// benchScript answers agent "a" with a short text; every call of the
// benchmark is a run of its own, so it is always step 0.
var benchScript = scripted.Script{"a": {scripted.Text("The forecast for Saturday is sunny with a high of 22C.")}}

func benchCalls(b *testing.B, srv *swarmtest.FakeServer, m model.Model, stream bool) {
	req := &model.Request{Agent: "a", RunID: "r", System: "You are terse.", Messages: []model.Message{{Role: model.RoleUser, Content: "Weather on Saturday?"}}}
	if stream {
		req.OnDelta = func(model.Delta) {}
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		req.RunID = strconv.Itoa(i)
		if _, err := m.Generate(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenAICall measures one Chat Completions call through the SDK
// over loopback HTTP against the fake server (client and server costs).
func BenchmarkOpenAICall(b *testing.B) {
	for _, stream := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "stream"}[stream], func(b *testing.B) {
			srv := swarmtest.NewOpenAIServer(b, benchScript)
			benchCalls(b, srv, srv.OpenAI(b), stream)
		})
	}
}

// BenchmarkAnthropicCall is BenchmarkOpenAICall for the Messages API.
func BenchmarkAnthropicCall(b *testing.B) {
	for _, stream := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "stream"}[stream], func(b *testing.B) {
			srv := swarmtest.NewAnthropicServer(b, benchScript)
			benchCalls(b, srv, srv.Anthropic(b), stream)
		})
	}
}
