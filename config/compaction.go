package config

import (
	"go.yaml.in/yaml/v3"

	"github.com/swarmrt/swarm/compact"
)

var compactionFields = []string{"window", "trigger", "messages", "keep", "instructions"}

// compaction reads the compaction: field of an agent or swarm.
func (p *parser) compaction(n *yaml.Node, what string) *compact.Config {
	if isNull(n) {
		return nil
	}
	what += ": compaction"
	fs := p.fields(n, what, compactionFields)
	c := &compact.Config{}
	count := func(name string, dst *int) {
		fd, ok := fs[name]
		if !ok || isNull(fd.val) {
			return
		}
		v := fd.val
		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Decode(dst) != nil || *dst < 0 {
			p.errf(v, "%s: %s: want a positive number, got %s", what, name, describe(v))
			*dst = 0
		}
	}
	count("window", &c.Window)
	count("messages", &c.Messages)
	count("keep", &c.Keep)
	if fd, ok := fs["trigger"]; ok && !isNull(fd.val) {
		v := fd.val
		if v.Kind != yaml.ScalarNode || (v.ShortTag() != "!!float" && v.ShortTag() != "!!int") || v.Decode(&c.Trigger) != nil || c.Trigger <= 0 || c.Trigger > 1 {
			p.errf(v, "%s: trigger: want a fraction of the window such as 0.8, got %s", what, describe(v))
			c.Trigger = 0
		}
	}
	if fd, ok := fs["instructions"]; ok {
		c.Instructions = p.str(fd.val, what, "instructions")
	}
	return c
}
