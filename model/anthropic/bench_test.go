package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/swarmrt/swarm/model"
)

// BenchmarkParamsImage measures building and encoding (with the SDK, as
// it sends it) a Messages request with a 2 MB image.
func BenchmarkParamsImage(b *testing.B) {
	m, err := New(WithModel("m"))
	if err != nil {
		b.Fatal(err)
	}
	img := make([]byte, 2<<20)
	for i := range img {
		img[i] = byte(i * 7)
	}
	req := &model.Request{System: "Describe the picture.", Messages: []model.Message{
		{Role: model.RoleUser, Content: "What is in it?", Parts: []model.Part{model.Image("image/png", img)}},
	}}
	b.ReportAllocs()
	for b.Loop() {
		p, err := m.params(req, "m")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(p); err != nil {
			b.Fatal(err)
		}
	}
}
