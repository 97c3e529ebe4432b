package compact

import (
	"strings"
	"testing"

	"github.com/swarmrt/swarm/model"
)

// An image counts toward the context window even as a blob reference,
// whose bytes the estimate never sees.
func TestEstimateCountsParts(t *testing.T) {
	text := []model.Message{{Role: model.RoleUser, Content: "look"}}
	img := []model.Message{{Role: model.RoleUser, Content: "look", Parts: []model.Part{
		{Type: model.PartImage, MediaType: "image/png", Blob: strings.Repeat("ab", 32), Size: 2 << 20},
	}}}
	if d := Estimate("", nil, img) - Estimate("", nil, text); d != 1600 {
		t.Errorf("an image of unknown size adds %d tokens, want 1600", d)
	}
}
