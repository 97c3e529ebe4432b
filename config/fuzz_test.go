package config_test

import (
	"testing"

	"github.com/swarmrt/swarm/config"
)

// FuzzParse checks that no input makes Parse panic, and that a file either
// parses or gives an error.
func FuzzParse(f *testing.F) {
	f.Add([]byte(fullFile))
	f.Add([]byte("version: 1\nagents: {a: {handoffs: [a, {agent: b}]}}\nswarms: {s: {input: {type: object}, result_schema: true}}\n"))
	f.Add([]byte("version: 1\ntools: {t: {command: [sh], input_schema: {type: object, properties: {a: {items: [{}]}}}}}\n"))
	f.Add([]byte("version: 1\nx: &a [*a]\n"))
	f.Add([]byte("version: 1\nagents:\n  a: &d {description: x}\n  b: *d\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := config.Parse(data, dir)
		if (file == nil) == (err == nil) {
			t.Fatalf("file %v, error %v", file, err)
		}
	})
}
