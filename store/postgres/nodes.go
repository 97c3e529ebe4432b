package postgres

import (
	"context"
	"time"

	"github.com/swarmrt/swarm/store"
)

var _ store.NodeDirectory = (*Store)(nil)

// AnnounceNode inserts or refreshes node id's row of the node table with
// url and the database's current time.
func (s *Store) AnnounceNode(ctx context.Context, id, url string) error {
	if err := s.check(); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO swarm_nodes (id, url, heartbeat) VALUES ($1, $2, now())
		ON CONFLICT (id) DO UPDATE SET url = EXCLUDED.url, heartbeat = EXCLUDED.heartbeat`, id, url)
	if err != nil {
		return s.wrap("announce node", err)
	}
	return nil
}

// Nodes returns the nodes whose heartbeat, by the database's clock, is
// younger than within, sorted by id.
func (s *Store) Nodes(ctx context.Context, within time.Duration) ([]store.Node, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT id, url, heartbeat FROM swarm_nodes
		WHERE heartbeat > now() - make_interval(secs => $1) ORDER BY id`, within.Seconds())
	if err != nil {
		return nil, s.wrap("list nodes", err)
	}
	defer rows.Close()
	var out []store.Node
	for rows.Next() {
		var n store.Node
		if err := rows.Scan(&n.ID, &n.URL, &n.Heartbeat); err != nil {
			return nil, s.wrap("list nodes", err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap("list nodes", err)
	}
	return out, nil
}

// RemoveNode deletes node id's row.
func (s *Store) RemoveNode(ctx context.Context, id string) error {
	if err := s.check(); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `DELETE FROM swarm_nodes WHERE id = $1`, id)
	if err != nil {
		return s.wrap("remove node", err)
	}
	return nil
}
