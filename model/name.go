package model

import "fmt"

// MaxNameLen is the longest name a provider accepts for a tool (1 to 64
// characters), and so for what names one: an agent, a swarm, a step.
const MaxNameLen = 64

// NameChar reports whether r may appear in a name: a letter, a digit, '_'
// or '-' (what every provider accepts in a tool's name).
func NameChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}

// CheckName refuses a name a provider would refuse for a tool: empty,
// longer than MaxNameLen, or with a character other than those NameChar
// accepts.
func CheckName(name string) error {
	if name == "" {
		return fmt.Errorf("empty name")
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("name %q is longer than %d characters", name, MaxNameLen)
	}
	for _, r := range name {
		if !NameChar(r) {
			return fmt.Errorf("name %q may contain only letters, digits, '_' and '-'", name)
		}
	}
	return nil
}
