package store

import (
	"context"
	"time"
)

// Node is a row of the node table of a store that several processes share:
// a node of a network (see package network), its base URL and when it last
// announced itself.
type Node struct {
	ID        string
	URL       string
	Heartbeat time.Time
}

// NodeDirectory is implemented by stores that several processes share
// (PostgreSQL): nodes of a network on one store find each other through it
// with no peer URLs configured. A network node discovers it by a type
// assertion on the runtime's store.
type NodeDirectory interface {
	// AnnounceNode inserts or refreshes node id's row with url and the
	// current time of the database.
	AnnounceNode(ctx context.Context, id, url string) error
	// Nodes returns the nodes whose heartbeat is younger than within.
	Nodes(ctx context.Context, within time.Duration) ([]Node, error)
	// RemoveNode deletes node id's row.
	RemoveNode(ctx context.Context, id string) error
}
