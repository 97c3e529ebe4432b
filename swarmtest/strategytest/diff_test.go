package strategytest

import (
	"slices"
	"testing"
)

// diffRecords names what a recovered journal has that a clean one lacks,
// and the other way round, repeats included: what a failure of the kit
// points a strategy's author at.
func TestDiffRecords(t *testing.T) {
	got := []string{"recorded a", "recorded note/10:01", "recorded x", "recorded x"}
	want := []string{"recorded a", "recorded note/10:00", "recorded x"}
	extra, missing := diffRecords(got, want)
	if !slices.Equal(extra, []string{"recorded note/10:01", "recorded x"}) || !slices.Equal(missing, []string{"recorded note/10:00"}) {
		t.Errorf("extra %v, missing %v", extra, missing)
	}
	if extra, missing := diffRecords(want, want); extra != nil || missing != nil {
		t.Errorf("same journals: extra %v, missing %v", extra, missing)
	}
}
