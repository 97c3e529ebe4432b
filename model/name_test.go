package model

import (
	"strings"
	"testing"
)

func TestCheckName(t *testing.T) {
	for name, want := range map[string]string{
		"weather_2-b":           "",
		"":                      "empty name",
		strings.Repeat("a", 64): "",
		strings.Repeat("a", 65): "longer than 64",
		"we ather":              "only letters",
		"plan.ner":              "only letters",
		"caf\u00e9":             "only letters",
		"new\nline":             "only letters",
	} {
		err := CheckName(name)
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: %v, want accepted", name, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: %v, want an error saying %q", name, err, want)
		}
	}
}
