package auth

import (
	"fmt"
	"strings"
)

// ParseTokens reads tokens in the text format of SWARM_TOKENS and token
// files: entries separated by ";" or new lines, each
//
//	name:secret:swarm1,swarm2
//
// where the swarm list may be "*" (or empty) for every swarm. Blank entries
// and lines starting with "#" are skipped. The secret may contain ":"
// (names and swarm ids cannot). Errors name the entry by position and name,
// never by its secret.
func ParseTokens(text string) ([]Token, error) {
	var out []Token
	n := 0
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			continue
		}
		for _, e := range strings.Split(line, ";") {
			e = strings.TrimSpace(e)
			if e == "" {
				continue
			}
			n++
			name, rest, ok1 := strings.Cut(e, ":")
			i := strings.LastIndex(rest, ":")
			if !ok1 || i < 0 {
				return nil, fmt.Errorf("auth: token %d (%q): want name:secret:swarms", n, name)
			}
			secret, list := rest[:i], rest[i+1:]
			if name == "" || secret == "" {
				return nil, fmt.Errorf("auth: token %d (%q): empty name or secret", n, name)
			}
			t := Token{Name: name, Secret: secret}
			for _, s := range strings.Split(list, ",") {
				if s = strings.TrimSpace(s); s != "" {
					t.Swarms = append(t.Swarms, s)
				}
			}
			out = append(out, t)
		}
	}
	return out, nil
}
