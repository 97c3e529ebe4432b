// Package a2a connects swarms to other agents with the Agent2Agent (A2A)
// protocol, version 1.0, built on the official Go SDK
// (github.com/a2aproject/a2a-go/v2).
//
// # Server
//
// [NewHandler] exposes the swarms of a runtime as A2A agents, one per swarm:
//
//	GET  /a2a/{swarm}/.well-known/agent-card.json   the swarm's agent card
//	POST /a2a/{swarm}                                the JSON-RPC binding
//	GET  /.well-known/agent-card.json                the default swarm's card
//
// An A2A task is a run of the swarm: the task id is the run id, and the
// task's state follows the run's (running → working, paused →
// input-required, completed → completed with the result as an artifact,
// failed → failed, stopped → canceled). A message that names an
// input-required task resumes the run with the message's text and files.
// A task's history holds the user's messages, their files as file parts
// with their bytes (or URLs), and the run's questions. Tasks are
// read from the runtime's store, so they survive restarts and include runs
// started by other front ends.
//
// # Client
//
// [Remote] makes a remote A2A agent a tool a model can delegate to, the way
// a handoff delegates to a local agent: the tool sends the request as a
// message, follows the remote task to its end and returns the remote
// result. [Sibling] makes a remote agent one that a captain absorbs like a
// local one ([absorb.Into]).
package a2a
