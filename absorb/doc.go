// Package absorb makes agents tools of a captain: the captain's model is
// offered one tool per skill of each agent it absorbs (its siblings), and
// every call of such a tool runs the sibling's own loop inside the
// captain's run, journaled like a handoff (see [swarm.Delegation]), or
// calls the skill's remote tool (an A2A agent, an MCP server's tool).
//
// A [Sibling] is an agent with the [Skill]s it offers, each with its
// [Input] type (text or a JSON object). [Into] absorbs siblings into a
// captain, [Captain] makes a text swarm led by one, and [Provide] and
// [Discover] let a package offer an agent to any program that links it,
// the way a database/sql driver registers itself:
//
//	func init() {
//		absorb.Provide(absorb.Provider{ID: "acme.math.factor", Description: "Factors numbers",
//			Skills: []absorb.Skill{{Name: "factor", Input: absorb.InputOf[Request]()}}, Build: New})
//	}
//
//	siblings, err := absorb.Discover("acme.math")
//	err = absorb.Into(captain, siblings...)
//	res, run, err := absorb.Captain(captain).Run(ctx, rt, "factor 30")
//
// Package absorb uses only the public API of package swarm.
package absorb
