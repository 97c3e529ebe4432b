package model

import (
	"strings"
	"sync"
)

// Price is what a model charges, in US dollars per million tokens.
type Price struct {
	// Input is the price of uncached input tokens.
	Input float64 `json:"input" yaml:"input"`
	// CachedInput is the price of input tokens read from the prompt cache.
	// Zero means the Input price.
	CachedInput float64 `json:"cached_input,omitempty" yaml:"cached_input"`
	// CacheWrite is the price of input tokens written to the prompt cache.
	// Zero means the Input price.
	CacheWrite float64 `json:"cache_write,omitempty" yaml:"cache_write"`
	// Output is the price of output tokens, reasoning tokens included.
	Output float64 `json:"output" yaml:"output"`
}

// Cost returns the cost of u in US dollars. Usage counts cached input
// tokens within InputTokens and cache writes apart from them, as every
// provider of this module reports them.
func (p Price) Cost(u Usage) float64 {
	cached := min(max(u.CachedInputTokens, 0), max(u.InputTokens, 0))
	cachedPrice, writePrice := p.CachedInput, p.CacheWrite
	if cachedPrice == 0 {
		cachedPrice = p.Input
	}
	if writePrice == 0 {
		writePrice = p.Input
	}
	micro := float64(u.InputTokens-cached)*p.Input +
		float64(cached)*cachedPrice +
		float64(u.CacheWriteTokens)*writePrice +
		float64(u.OutputTokens)*p.Output
	return micro / 1e6
}

// builtinPrices are the vendors' published list prices for standard
// (non-batch) requests as of 2025-11-15, in USD per million tokens. Keys are
// model specs; a dated model version ("claude-sonnet-4-5-20250929") takes
// the price of its undated name.
var builtinPrices = map[string]Price{
	// OpenAI.
	"openai:gpt-5":        {Input: 1.25, CachedInput: 0.125, Output: 10},
	"openai:gpt-5-mini":   {Input: 0.25, CachedInput: 0.025, Output: 2},
	"openai:gpt-5-nano":   {Input: 0.05, CachedInput: 0.005, Output: 0.40},
	"openai:gpt-4.1":      {Input: 2, CachedInput: 0.50, Output: 8},
	"openai:gpt-4.1-mini": {Input: 0.40, CachedInput: 0.10, Output: 1.60},
	"openai:gpt-4.1-nano": {Input: 0.10, CachedInput: 0.025, Output: 0.40},
	"openai:gpt-4o":       {Input: 2.50, CachedInput: 1.25, Output: 10},
	"openai:gpt-4o-mini":  {Input: 0.15, CachedInput: 0.075, Output: 0.60},
	"openai:o3":           {Input: 2, CachedInput: 0.50, Output: 8},
	"openai:o3-mini":      {Input: 1.10, CachedInput: 0.55, Output: 4.40},
	"openai:o4-mini":      {Input: 1.10, CachedInput: 0.275, Output: 4.40},
	// Anthropic: cache writes are the 5-minute cache's.
	"anthropic:claude-opus-4-5":   {Input: 5, CachedInput: 0.50, CacheWrite: 6.25, Output: 25},
	"anthropic:claude-opus-4-1":   {Input: 15, CachedInput: 1.50, CacheWrite: 18.75, Output: 75},
	"anthropic:claude-opus-4":     {Input: 15, CachedInput: 1.50, CacheWrite: 18.75, Output: 75},
	"anthropic:claude-sonnet-4-5": {Input: 3, CachedInput: 0.30, CacheWrite: 3.75, Output: 15},
	"anthropic:claude-sonnet-4":   {Input: 3, CachedInput: 0.30, CacheWrite: 3.75, Output: 15},
	"anthropic:claude-3-7-sonnet": {Input: 3, CachedInput: 0.30, CacheWrite: 3.75, Output: 15},
	"anthropic:claude-haiku-4-5":  {Input: 1, CachedInput: 0.10, CacheWrite: 1.25, Output: 5},
	"anthropic:claude-3-5-haiku":  {Input: 0.80, CachedInput: 0.08, CacheWrite: 1, Output: 4},
}

// priceAliases map providers that bill like another one.
var priceAliases = map[string]string{"openai-responses": "openai"}

var (
	priceMu   sync.RWMutex
	overrides = map[string]Price{}
)

// SetPrice sets the price of the model spec ("openai:gpt-4.1-mini",
// "myllm:some-model"), overriding the builtin table. It is safe for
// concurrent use.
func SetPrice(spec string, p Price) {
	priceMu.Lock()
	overrides[spec] = p
	priceMu.Unlock()
}

// LookupPrice returns the price of the model spec: a price set with
// [SetPrice], else the builtin table's. A spec naming a dated version
// ("anthropic:claude-sonnet-4-5-20250929", "openai:gpt-4.1-2025-04-14")
// falls back to the known spec it extends with numeric "-" parts; other
// variants ("openai:o3-pro") are unknown unless set. The second
// result is false when the price is unknown.
func LookupPrice(spec string) (Price, bool) {
	provider, name, _ := strings.Cut(spec, ":")
	if alias, ok := priceAliases[provider]; ok {
		if p, ok := lookupPrice(spec); ok {
			return p, true
		}
		spec = alias + ":" + name
	}
	return lookupPrice(spec)
}

func lookupPrice(spec string) (Price, bool) {
	priceMu.RLock()
	defer priceMu.RUnlock()
	for s := spec; ; {
		if p, ok := overrides[s]; ok {
			return p, true
		}
		if p, ok := builtinPrices[s]; ok {
			return p, true
		}
		i := strings.LastIndexByte(s, '-')
		if i < 0 || i < strings.IndexByte(s, ':') || !digits(s[i+1:]) {
			return Price{}, false
		}
		s = s[:i]
	}
}

// digits reports whether s is a non-empty run of ASCII digits.
func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
