package model_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/swarmrt/swarm/model"
)

func TestLookupPrice(t *testing.T) {
	for _, tc := range []struct {
		spec string
		ok   bool
		in   float64
	}{
		{"openai:gpt-4.1-mini", true, 0.40},
		{"openai:gpt-4.1-2025-04-14", true, 2},
		{"openai-responses:gpt-4.1-mini", true, 0.40},
		{"anthropic:claude-sonnet-4-5-20250929", true, 3},
		{"openai:o3-pro", false, 0},
		{"ollama:llama3.2", false, 0},
		{"openai", false, 0},
	} {
		p, ok := model.LookupPrice(tc.spec)
		if ok != tc.ok || p.Input != tc.in {
			t.Errorf("LookupPrice(%q) = %+v, %v; want input %v, %v", tc.spec, p, ok, tc.in, tc.ok)
		}
	}
	model.SetPrice("myllm:small", model.Price{Input: 1, Output: 2})
	model.SetPrice("openai:gpt-4.1-mini", model.Price{Input: 9, Output: 9})
	t.Cleanup(func() {
		model.SetPrice("openai:gpt-4.1-mini", model.Price{Input: 0.40, CachedInput: 0.10, Output: 1.60})
	})
	if p, ok := model.LookupPrice("myllm:small"); !ok || p.Output != 2 {
		t.Errorf("override of a new spec: %+v %v", p, ok)
	}
	if p, _ := model.LookupPrice("openai:gpt-4.1-mini"); p.Input != 9 {
		t.Errorf("override of a builtin: %+v", p)
	}
}

func TestCost(t *testing.T) {
	p := model.Price{Input: 3, CachedInput: 0.30, CacheWrite: 3.75, Output: 15}
	u := model.Usage{InputTokens: 1_000_000, CachedInputTokens: 400_000, CacheWriteTokens: 100_000, OutputTokens: 200_000}
	want := 0.6*3 + 0.4*0.30 + 0.1*3.75 + 0.2*15
	if got := p.Cost(u); math.Abs(got-want) > 1e-9 {
		t.Errorf("Cost = %v, want %v", got, want)
	}
	// Zero cache prices fall back to the input price.
	if got := (model.Price{Input: 2}).Cost(model.Usage{InputTokens: 500_000, CachedInputTokens: 500_000, CacheWriteTokens: 500_000}); math.Abs(got-2) > 1e-9 {
		t.Errorf("Cost with default cache prices = %v, want 2", got)
	}
	if got := p.Cost(model.Usage{}); got != 0 {
		t.Errorf("Cost of nothing = %v", got)
	}
}

func TestUsageAddCacheWrites(t *testing.T) {
	u := model.Usage{CacheWriteTokens: 3, Calls: 1}.Add(model.Usage{CacheWriteTokens: 4, Calls: 1})
	if u.CacheWriteTokens != 7 || u.Calls != 2 {
		t.Errorf("Add = %+v", u)
	}
}

func ExampleLookupPrice() {
	p, _ := model.LookupPrice("openai:gpt-4.1-mini")
	cost := p.Cost(model.Usage{InputTokens: 10_000, CachedInputTokens: 2_000, OutputTokens: 1_000})
	fmt.Printf("$%.4f\n", cost)
	// Output: $0.0050
}
