// Package config loads versioned, declarative swarm definitions from YAML and
// turns them into the runtime's own Go values: [swarm.Agent]s, swarms made
// with [swarm.Define] and command-line [swarm.Tool]s.
//
// A file (version 1) looks like this:
//
//	version: 1
//	model: scripted:script.yaml      # optional default model spec of the file
//	limits:                          # calls of every run tree, all its runs together (see File.ApplyLimits); a team's or conversation's per user message, mail or task
//	  model_calls: 2000              # default 1000 (swarm.DefaultMaxModelCalls); -1: no limit
//	  tool_calls: 10000              # default 5000 (swarm.DefaultMaxToolCalls); -1: no limit
//	tools:
//	  lookup_policy:
//	    description: Looks up a policy by number
//	    command: ["./tools/lookup.sh", "--verbose"]   # argv, never a shell string
//	    input_schema:                  # JSON schema of the arguments (default {type: object})
//	      type: object
//	      properties: {policy: {type: string}}
//	      required: [policy]
//	    timeout: 10s                   # default 30s
//	    dir: .                         # working directory (default: the file's directory)
//	    env: {FOO: bar}                # extra environment variables
//	mcp_servers:                     # MCP servers whose tools agents and swarms may use
//	  everything:
//	    command: ["npx", "mcp-server-everything"]   # stdio; or url: https://host/mcp (streamable HTTP)
//	    env: {LOG_LEVEL: warn}         # extra environment of the command
//	    headers: {Authorization: "Bearer ${TOKEN}"}  # HTTP headers; ${NAME} reads the environment
//	    allow: [echo, "get-*"]         # keep only these tools (patterns); deny: drop these
//	    timeout: 30s                   # per call (default 60s)
//	agents:
//	  weather:
//	    description: Weather forecasts
//	    instructions: You forecast the weather for {{.Input}}.
//	    model: openai:gpt-4.1-mini     # optional
//	    tools: [lookup_policy]
//	    toolsets: [everything]         # offers everything__echo, everything__get-sum, ...
//	    handoffs: [calendar, {agent: allergens, description: "Pollen levels"}]
//	    max_turns: 5
//	    skills:                        # what a captain that absorbs it gets, one tool per skill
//	      forecast: {description: "A day's forecast", input: {type: object, properties: {day: {type: string}}}}
//	    absorb: [calendar]             # other agents as tools: "all", or names of this file's agents
//	                                   # or of agents provided to the program (absorb.Provide)
//	swarms:
//	  planner:
//	    description: Plans activities
//	    instructions: Plan an activity for {{.Input}}.
//	    handoffs: [weather]
//	    max_turns: 10
//	    input: text                    # "text" (default) or a JSON schema of a structured input
//	    result_schema: {type: object, properties: {activity: {type: string}}, required: [activity]}
//	    tags: [planning]
//	    builtins: false                # offer no complete/pause/fail tools (default true; see Spec.NoBuiltins)
//	    loop:                          # optional loop strategy (default: simple)
//	      strategy: adaptive           # task and progress ledgers, stall detection, replans
//	      evaluator: critic            # optional: an agent handoff that judges progress
//	      stall_threshold: 3           # stalls that trigger a replan (default 3)
//	      max_replans: 2               # replans before escalation (default 2; 0 or -1: none)
//	      max_rounds: 20               # rounds of the whole run (default 20)
//	      on_exhausted: pause          # pause for a plan review (default) or fail
//	    absorb: all                    # the orchestrator absorbs every other agent, provided ones too
//	a2a_agents:                        # remote A2A agents (see package a2a)
//	  researcher:
//	    url: https://agents.example.com/a2a/researcher   # base URL or agent card URL
//	    token_env: RESEARCHER_TOKEN    # optional: bearer token from this variable
//	    description: Finds sources     # optional tool description
//	  planner:
//	    url: https://swarm.example.com/a2a/trip
//	    oauth:                         # OAuth access tokens (also on mcp_servers entries with a url)
//	      client_id: swarm
//	      client_secret_env: PLANNER_SECRET   # client credentials; omit for a person's tokens (swarm login)
//	      scopes: ["swarm:trip"]
//	    card_keys: keys/planner.pem    # trust only a card signed by these keys (PEM or JWK set)
//	conversations:
//	  front-desk:
//	    description: Receptionist and sales
//	    queen: receptionist            # the agent that answers first
//	    agents: [sales]                # the others, reachable by handover
//	    handovers:                     # who may transfer to whom (default: queen <-> every agent)
//	      receptionist: [{agent: sales, sets: [topic], description: "Sales questions"}]
//	      sales: [receptionist]
//	    return_to_queen: false         # true: the queen answers every new message
//	    max_turns: 6                   # rounds per user message
//	    history: own_tools             # own_tools (default), full or text
//	    agent_history: {sales: text}   # per-agent policy
//	    name_speakers: true            # prefix other agents' text with [name]
//	    context: {topic: "", customer: ""}   # the initial shared context
//	workflows:                         # deterministic graphs (package workflow); swarm run ID starts one
//	  article:
//	    start: write                   # default: the first node
//	    max_steps: 12                  # nodes run at most, cycles included (default 100)
//	    nodes:
//	      write: {agent: weather, retry: 1, timeout: 2m}   # or swarm: ID (a swarm, team or workflow)
//	      approve: {human: "Publish it?", schema: {type: object, properties: {ok: {type: boolean}}}, asks: 2}
//	    edges:
//	      - {from: write, to: approve}
//	      - {from: approve, to: write, when: {field: ok, equals: false}}   # GJSON path, JSON equality
//
// Relative paths resolve against the directory of the YAML file: the script
// of a "scripted:PATH" model spec, a command whose first element contains a
// slash, and a tool's dir. A command that is a bare name is looked up in PATH
// when the file is loaded.
//
// A handoff naming a swarm of the file ("handoffs: [ticketing]", or
// "{swarm: ticketing, customizable: true}") starts that swarm as a child
// run ([swarm.ToSwarmID]); customizable lets the calling model add
// instructions, registered agents and tools to the child. The file's tools
// are registered with the runtime, so customizations can name them. A
// handoff naming a conversation of the file is an error when the file is
// loaded: a conversation answers a user and returns no result.
//
// Agent handoffs name agents of the same file and are resolved by value
// ([swarm.ToAgent]), so a file is self-contained and agents may hand off to
// each other in cycles. A handoff to an agent the file does not define (one
// registered from Go, say) is an error. Agents and swarms share one
// namespace.
//
// A handoff may also name an entry of a2a_agents: the model is then offered
// the tool delegate_to_<name> (made with [a2a.Remote]), which sends the
// request to the remote agent and returns its result. The token variable
// must be set when the file is loaded.
//
// A swarm without result_schema returns text; with one, its result is the
// JSON value ([json.RawMessage]) the schema describes. A swarm whose input is
// a schema takes a JSON input ([json.RawMessage]), which the runtime
// validates against the schema when a run starts: an invalid input makes the
// start fail with an error wrapping [swarm.ErrInvalidInput].
//
// A conversation ([conversation.Define]) has a map[string]any context;
// agents render it as {{.Context.key}}, and a handover's sets name the keys
// the model fills in when it transfers (they must be keys of context).
// Conversations share the namespace of agents and swarms; `swarm chat` talks
// to them.
//
// Every mistake in a file (an unknown field, a dangling reference, an invalid
// JSON schema, a missing command...) is reported as an [*Error] that carries
// the file name and line; all mistakes found are returned together.
//
// # Skills and absorb
//
// An agent's skills (name, description, instructions, tools, input: "text"
// or a JSON schema of an object) are what a captain that absorbs it offers
// its model (see [absorb.Into]). absorb: all absorbs every other agent
// of the file and every agent provided to the program ([absorb.Discover]); a
// list names agents of the file, provided agents by name or provider id, and
// entries of a2a_agents ([a2a.Sibling]) or mcp_servers ([mcp.Toolset.Sibling]),
// which run in other processes.
// A provider id picks that provider's agent; an agent name shared by two
// provided agents, and absorb: all while two provided agents (other than
// the captain's name) share a name, are mistakes naming both provider ids.
// Absorbing itself (or a provided agent of its own name), an unknown name,
// or a name that is both an agent of the file and a provided agent is a
// mistake of the file; the checks of
// [absorb.Into] (an input that is not an object, say) fail Register.
//
// # MCP servers
//
// The tools of an MCP server listed under toolsets are offered to the model
// as "<server>__<tool>" (see [mcp.Toolset]). [File.Register] starts or
// connects to the servers that agents or swarms use and lists their tools,
// so a server that cannot be reached makes it fail; the sessions stay open
// for the calls until [File.Close], which is called after the runtimes are
// closed. A server that dies is started again at the next call; the call
// that found it dead is an error tool result.
//
// # Command tools
//
// A command tool runs its argv directly (no shell), with the model's JSON
// arguments on standard input, after validating them against input_schema
// (invalid arguments give a [*swarm.ArgumentError] and the command does not
// run). Its environment is the process's, plus the tool's env, plus
//
//	SWARM_RUN_ID           the run's id
//	SWARM_STEP_KEY         the journal step key of the call
//	SWARM_IDEMPOTENCY_KEY  the same for every attempt of this call (see [swarm.IdempotencyKey])
//	SWARM_TOOL             the tool's name
//
// Its standard output, without one trailing newline and capped at 1 MiB, is
// the tool's result. A non-zero exit status is a tool error reporting the
// status and the end of standard error. On Unix the command runs in its own
// process group, which is killed when the call times out or its context is
// cancelled, so the processes it started die with it; on Linux the command
// is also killed when the process running it dies (even by SIGKILL). Its
// input is written whole before it starts, so it never reads a cut input.
package config
