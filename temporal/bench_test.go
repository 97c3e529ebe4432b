package temporal_test

import (
	"context"
	"testing"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"
)

// historySize counts the events and the encoded bytes of workflow id's
// history.
func historySize(b testing.TB, c client.Client, id string) (events, bytes int) {
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			b.Fatal(err)
		}
		events++
		bytes += proto.Size(ev)
	}
	return events, bytes
}
