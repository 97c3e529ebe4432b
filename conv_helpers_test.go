package swarm_test

import "github.com/swarmrt/swarm/conversation/conversationtest"

// The conversations root tests run (compaction, snapshots, guardrails,
// forks of a conversation): the same as package conversation's tests.

type (
	Sale         = conversationtest.Sale
	effects      = conversationtest.Effects
	convRecorder = conversationtest.Recorder
)

var (
	shop        = conversationtest.Shop
	convRuntime = conversationtest.Runtime
)
