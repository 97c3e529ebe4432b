package postgres

import (
	"reflect"
	"strings"
	"testing"
)

// TestWritesDoNotNotify checks that no write statement calls pg_notify:
// PostgreSQL holds one server-wide lock from the commit of a transaction
// that notified until its WAL flush, so a NOTIFY in the writing
// transaction serializes every node's writes (see notify.go). The
// notifier's own statement is the only one that notifies.
func TestWritesDoNotNotify(t *testing.T) {
	q := reflect.ValueOf(newQueries())
	for i := range q.NumField() {
		if sql := q.Field(i).String(); strings.Contains(strings.ToLower(sql), "notify") {
			t.Errorf("statement %s notifies:\n%s", q.Type().Field(i).Name, sql)
		}
	}
	for name, sql := range map[string]string{"spend": spendSQL, "claimTask": claimSQL, "completeTask": completeSQL, "releaseTasks": releaseSQL} {
		if strings.Contains(strings.ToLower(sql), "notify") {
			t.Errorf("statement %s notifies:\n%s", name, sql)
		}
	}
	if !strings.Contains(notifySQL, "pg_notify") || !strings.Contains(notifySQL, "'synchronous_commit', 'off'") {
		t.Errorf("the notifier's statement does not notify without waiting for its flush: %s", notifySQL)
	}
}
