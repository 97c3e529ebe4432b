// Package network lets swarm nodes share capabilities (tools, agents and
// swarms, with tags) and discover each other's at run time, with no names
// or URLs of providers hard-coded in the consumers and with failure
// detection, failover and durable calls.
//
// # Sharing and consuming
//
// A [Node] shares items ([Node.Share] with [ShareTool], [ShareAgent] and
// [ShareSwarm]; `share:` in swarm.yaml), serves the peer protocol
// ([Node.Handler], mounted by `swarm serve` under /v1/network/) and follows
// its peers into a [Registry] indexed by name and by tag. [Node.Discover] is a
// tool bound to a capability (not to a provider); [Node.Catalog] is a
// dynamic tool set ([swarm.DynamicTools]) resolved at every model call, so
// capabilities that came online mid-run are offered at the next call and
// those of departed providers are not (`network_tools:` in swarm.yaml).
//
// # Joining
//
// A node learns of peers from its configured URLs (one is enough: every
// hello lists the peers its sender knows, and a hello received from a node
// with a URL makes the receiver follow it back) and, when its runtime's
// store is a [store.NodeDirectory] (PostgreSQL), from the store's node
// table, in which it announces itself every third of FailAfter.
//
// A hello is checked like any request (see package auth), but on a
// loopback node without tokens anyone may send one, and the node follows
// the URL it names: that is how nodes that configured one peer find each
// other. What such a peer can cost is bounded: a node follows at most
// 1000 peers beyond its configured ones, a hello carries at most
// MaxCapabilities capabilities, and a hello's answer or one event of a
// feed is at most 16 MiB ([ErrTooLarge]); a peer named by another that
// breaks these limits is dropped at once.
//
// # Failure detection
//
// A node follows each peer's change feed. A feed that breaks (the peer's
// process died, its connection was reset) makes the node say hello again
// at once; if that fails the peer is removed with its capabilities. A feed
// that sends nothing for FailAfter (default 3s; the feed sends a heartbeat
// every third of it) is ended, with the same effect: a hung or partitioned
// peer is removed within FailAfter plus one hello timeout (FailAfter). A
// removed peer is tried again every third of FailAfter and re-added when it
// answers; a peer learned from others is forgotten after 20 failed tries.
//
// # Wire format
//
// JSON over HTTP, behind the server's bearer-token authentication (a token
// limited to capabilities sees and calls only those):
//
//	POST /v1/network/hello   body and answer: a Hello
//	  {"type":"hello","node":{"id":"kitchen","url":"http://10.0.0.5:8080","started_at":"..."},
//	   "generation":3,"capabilities":[{"name":"check-inventory","description":"...","kind":"tool",
//	   "tags":["food","stock"],"input_schema":{...},"output_schema":{...},"version":"1.2"}],
//	   "peers":["http://10.0.0.6:8080"]}
//	  The sender's hello (its url empty when it only consumes); the answer is
//	  the receiver's. 400 for a malformed hello, 413 for one with more than
//	  MaxCapabilities (default 1000) capabilities.
//
//	GET /v1/network/feed     text/event-stream
//	  event: hello      data: a Hello, at once and after every change of what
//	                    the node shares or of the peers it knows
//	  event: heartbeat  data: {"generation":3,"time":"..."}, every FailAfter/3
//	  event: goodbye    data: {"node":"kitchen"}, when the node leaves (then
//	                    the feed ends): followers drop its capabilities at once
//	  A leaving node answers hellos and feeds with 503.
//
//	POST /v1/network/query   the seed's capability_query / capability_response
//	  {"type":"capability_query","name":"check-inventory","tag":"food"}   (both optional)
//	  → {"type":"capability_response","node":{...},"capabilities":[...]}
//
//	POST /v1/network/call
//	  {"name":"check-inventory","version":"1.2","input":{"item":"eggs"},
//	   "caller_run":"run_1","caller_step":"t1/tool/call_1","idempotency_key":"run_1/t1/tool/call_1"}
//	  → 200 {"output":"eggs: 3 left","is_error":false,"run_id":"...","replayed":false}
//	  404 unknown capability or version, 403 token not allowed it, 400 bad
//	  request, 503 the provider could not perform it. is_error reports the
//	  capability's own failure (bad arguments, a failed run): it is not
//	  retried elsewhere.
//	  Both may hold "parts": images, files and audio as A2A FileParts,
//	  {"kind":"file","file":{"name":"a.png","mimeType":"image/png","bytes":"<base64>"}}
//	  or with "uri" instead of "bytes". A call of a shared swarm or agent
//	  carries the caller's conversation parts (its run gets them with its
//	  input); a shared tool's attached parts come back with its result.
//	  A bad part (not a file, bad base64, over 64 MiB, a media type that
//	  does not fit, more than 32) is the call's error (is_error), naming it.
//
//	GET /v1/network/peers    the node's Status (what `swarm network` prints)
//	/v1/network/mcp          the shared capabilities as MCP tools (streamable HTTP)
//
// Shared swarms and agents are registered swarms of the node's runtime, so
// they are also A2A agents at /a2a/{name} of `swarm serve`, whose cards
// carry the tags as skill tags.
//
// # Durable calls
//
// A call carries the caller's idempotency key (its run id, run instance
// and step key: see swarm.IdempotencyKey; the same for every attempt of a
// recorded step, after a crash too, and another for a run started again
// on a deleted run's id). The
// provider runs a shared swarm or agent as the run [RunID](name, key), so a
// repeated call finds the run it started (running or finished) instead of
// starting another, and the run survives a restart of the provider like
// any run. A shared tool's call runs detached from the request and is kept
// by key for DedupTTL (default one hour, in the provider's memory): a
// repeated call waits for it or gets its result. The tool gets the
// caller's key as its own [swarm.IdempotencyKey].
//
// Policy when a provider disconnects mid-call: the caller sends the call
// again, with the same key, every FailAfter/3 for as long as its registry
// lists the provider, so a provider that comes back within the detection
// bound is re-attached to the call in progress. Once the provider is
// removed, the call fails over to another provider of the same capability
// and version, with the same key. When no provider is left, the caller
// waits at most FailAfter more for a lost provider to come back (a
// restarted node answering at its URL: the call is re-attached by its key,
// to the run it recovered for a shared swarm or agent) or for a new one;
// then the tool call fails with [ErrNoProvider] and the model sees the
// error. A call in flight to a provider that leaves the registry (one
// that hangs is removed after FailAfter) is given up at once and treated
// like a lost connection, and a call ends with [ErrCallTimeout] after
// Options.CallTimeout (default 10 minutes) whatever its providers do. A
// failover may perform the
// capability a second time on another provider (the first may have acted
// before it died); a capability whose effect must happen at most once uses
// the idempotency key it is given against the system it changes. The
// caller's journal never records a step twice: a recovered consumer
// repeats only calls whose result it had not recorded, with their keys.
package network
