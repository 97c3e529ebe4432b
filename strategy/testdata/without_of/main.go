// Command without_of gives a swarm its strategy without strategy.Of, the
// mistake TestStrategyWithoutOf compiles: it must not build, and the
// compiler's message must name the fix.
package main

import (
	"context"
	"encoding/json"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/strategy"
)

type plain struct{}

func (plain) Drive(context.Context, *strategy.Driver) (json.RawMessage, error) { return nil, nil }

func (plain) Check(*strategy.Driver) (int, error) { return 0, nil }

func main() {
	_ = swarm.Define[string, string]("plain", "", func(string) swarm.Spec { return swarm.Spec{Strategy: plain{}} })
}
