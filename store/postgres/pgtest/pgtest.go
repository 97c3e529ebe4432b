// Package pgtest gives tests a fresh PostgreSQL schema of their own.
//
// The server is named by the environment variable SWARM_TEST_POSTGRES (a
// postgres:// URL). When the variable is unset, postgres://127.0.0.1:5432/test
// is used if something listens on that port; otherwise tests that need
// PostgreSQL are skipped with a loud message. A server named by the variable
// that cannot be reached fails the test: it was promised.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvVar names the test server.
const EnvVar = "SWARM_TEST_POSTGRES"

// DefaultURL is used when EnvVar is unset and the port answers.
const DefaultURL = "postgres://127.0.0.1:5432/test?sslmode=disable"

var (
	once    sync.Once
	baseURL string
	reason  string
	fromEnv bool
)

func locate() {
	if u := os.Getenv(EnvVar); u != "" {
		baseURL, fromEnv = u, true
		return
	}
	c, err := net.DialTimeout("tcp", "127.0.0.1:5432", time.Second)
	if err != nil {
		reason = fmt.Sprintf("%s is unset and nothing listens on 127.0.0.1:5432 (%v)", EnvVar, err)
		fmt.Fprintln(os.Stderr, "SKIPPING PostgreSQL tests: "+reason)
		return
	}
	c.Close()
	baseURL = DefaultURL
}

// Server returns the test server's URL, skipping t if there is none.
func Server(t testing.TB) string {
	t.Helper()
	once.Do(locate)
	if baseURL == "" {
		t.Skip("SKIPPING PostgreSQL tests: " + reason)
	}
	return baseURL
}

// URL creates an empty schema on the test server and returns a URL whose
// connections use it (search_path), with params ("pool_max_conns=4") added
// to the query. The schema is dropped when t ends.
func URL(t testing.TB, params ...string) string {
	t.Helper()
	base := Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		if fromEnv {
			t.Fatalf("PostgreSQL named by %s=%s is unreachable: %v", EnvVar, base, err)
		}
		t.Skipf("SKIPPING PostgreSQL tests: cannot connect to %s: %v", base, err)
	}
	defer conn.Close(context.Background())
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "swarm_test_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create test schema: %v", err)
	}
	t.Cleanup(func() { Drop(t, base, schema) })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: want a postgres:// URL: %v", base, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	for _, p := range params {
		k, v, _ := strings.Cut(p, "=")
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Drop drops schema and everything in it.
func Drop(t testing.TB, base, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Errorf("drop test schema %s: %v", schema, err)
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		t.Errorf("drop test schema %s: %v", schema, err)
	}
}
