// Package mcp connects swarms to the Model Context Protocol, both ways.
//
// As a server ([NewServer], [NewHTTPHandler]), it offers every registered
// swarm as an MCP tool that starts a run and waits for it, a resume tool for
// paused runs, run results as resources (swarm://runs/{id}/result) and swarm
// instructions as prompts, over stdio (the swarm mcp command) or streamable
// HTTP (/mcp of swarm serve). Over HTTP it speaks the 2026-07-28 revision
// (stateless) beside 2025-11-25 (sessions), and the Tasks extension: a long
// run is a task whose id is the run id ([Task]).
//
// As a client ([Toolset]), it lets agents use the tools of MCP servers,
// reached by running a command (stdio) or at a URL (streamable HTTP).
// [Toolset.Sibling] makes a server an agent that a captain absorbs like a
// local one ([absorb.Into]), each of its tools a skill.
//
// It is built on the official SDK, github.com/modelcontextprotocol/go-sdk.
package mcp
