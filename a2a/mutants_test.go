package a2a_test

// Rules that a mutation sample found no test checking: each test here fails
// when its rule is broken by one line.

import (
	"encoding/json"
	"errors"
	"testing"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/swarmrt/swarm/a2a"
)

// TestCardKeyRotation: a card signed by an old key and a new one verifies
// with either key trusted, the second as well as the first (a verifier
// that moved on to the new key during a rotation), and with neither it is
// refused.
func TestCardKeyRotation(t *testing.T) {
	old, cur := newSigner(t), newSigner(t)
	card := &sdk.AgentCard{Name: "echo", Description: "Echoes", Version: "1"}
	for _, s := range []*a2a.CardSigner{old, cur} {
		if err := s.Sign(card, ""); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := json.Marshal(card)
	if err != nil {
		t.Fatal(err)
	}
	for name, keys := range map[string]jose.JSONWebKeySet{"the first key": old.PublicKeys(), "the second key": cur.PublicKeys()} {
		if err := a2a.VerifyCard(raw, keys); err != nil {
			t.Errorf("a card signed by two keys, trusting %s: %v", name, err)
		}
	}
	if err := a2a.VerifyCard(raw, newSigner(t).PublicKeys()); !errors.Is(err, a2a.ErrCardSignature) {
		t.Errorf("a card signed by two keys, trusting neither: %v, want ErrCardSignature", err)
	}
}
