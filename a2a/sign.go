package a2a

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	jose "github.com/go-jose/go-jose/v4"
)

// KeysPath is where [NewHandler] serves the public keys of its card
// signer (a JWK set), named by the jku header of every signature.
const KeysPath = PathPrefix + ".well-known/jwks.json"

// ErrCardSignature is the error of an agent card none of whose signatures
// verifies with a trusted key (or that has none).
var ErrCardSignature = errors.New("agent card signature not verified")

// CardSigner signs agent cards as A2A 1.0 specifies (§8.4): a JWS whose
// payload is the card without its signatures, canonicalized with the JSON
// Canonicalization Scheme (RFC 8785), carried in the card's signatures as
// its protected header and signature. Keys are ECDSA P-256 (ES256), P-384
// (ES384), RSA (RS256, at least 2048 bits) or Ed25519 (EdDSA).
type CardSigner struct {
	key jose.JSONWebKey
	alg jose.SignatureAlgorithm
}

// NewCardSigner returns a signer with key, whose key id is the RFC 7638
// thumbprint of its public key.
func NewCardSigner(key crypto.Signer) (*CardSigner, error) {
	var alg jose.SignatureAlgorithm
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			alg = jose.ES256
		case elliptic.P384():
			alg = jose.ES384
		default:
			return nil, fmt.Errorf("a2a: card signing key: ECDSA curve %s: want P-256 or P-384", k.Curve.Params().Name)
		}
	case *rsa.PrivateKey:
		if k.N.BitLen() < 2048 {
			return nil, fmt.Errorf("a2a: card signing key: RSA key of %d bits: want at least 2048", k.N.BitLen())
		}
		alg = jose.RS256
	case ed25519.PrivateKey:
		alg = jose.EdDSA
	default:
		return nil, fmt.Errorf("a2a: card signing key: %T: want an ECDSA, RSA or Ed25519 private key", key)
	}
	pub := jose.JSONWebKey{Key: key.Public(), Algorithm: string(alg), Use: "sig"}
	tp, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("a2a: card signing key: %w", err)
	}
	kid := base64.RawURLEncoding.EncodeToString(tp)
	return &CardSigner{key: jose.JSONWebKey{Key: key, KeyID: kid, Algorithm: string(alg), Use: "sig"}, alg: alg}, nil
}

// LoadCardSigner reads a PEM private key (PKCS #8, SEC 1 EC or PKCS #1
// RSA) from path and returns its signer.
func LoadCardSigner(path string) (*CardSigner, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("a2a: card signing key: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("a2a: card signing key %s: no PEM block", path)
	}
	var key any
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("a2a: card signing key %s: %w", path, err)
	}
	s, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("a2a: card signing key %s: %T is not a signing key", path, key)
	}
	return NewCardSigner(s)
}

// KeyID is the key id (kid) of the signer's key.
func (s *CardSigner) KeyID() string { return s.key.KeyID }

// PublicKeys is the signer's public key as a JWK set, for verifiers.
func (s *CardSigner) PublicKeys() jose.JSONWebKeySet {
	return jose.JSONWebKeySet{Keys: []jose.JSONWebKey{s.key.Public()}}
}

// Sign adds a signature of card to its signatures, naming the key set at
// jku (if not empty) in the protected header.
func (s *CardSigner) Sign(card *sdk.AgentCard, jku string) error {
	unsigned := *card
	unsigned.Signatures = nil
	raw, err := json.Marshal(&unsigned)
	if err != nil {
		return fmt.Errorf("a2a: sign card: %w", err)
	}
	payload, err := canonicalCard(raw)
	if err != nil {
		return fmt.Errorf("a2a: sign card: %w", err)
	}
	extra := map[jose.HeaderKey]any{"typ": "JOSE"}
	if jku != "" {
		extra["jku"] = jku
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: s.alg, Key: s.key}, &jose.SignerOptions{ExtraHeaders: extra})
	if err != nil {
		return fmt.Errorf("a2a: sign card: %w", err)
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		return fmt.Errorf("a2a: sign card: %w", err)
	}
	compact, err := obj.DetachedCompactSerialize()
	if err != nil {
		return fmt.Errorf("a2a: sign card: %w", err)
	}
	protected, sig, _ := strings.Cut(compact, "..")
	card.Signatures = append(card.Signatures, sdk.AgentCardSignature{Protected: protected, Signature: sig})
	return nil
}

// cardAlgorithms are the algorithms a card signature may use: asymmetric
// ones only, so that neither "none" nor an HMAC keyed with a public key
// can pass.
var cardAlgorithms = []jose.SignatureAlgorithm{jose.ES256, jose.ES384, jose.ES512, jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512, jose.EdDSA}

// maxCardSignatures bounds the signatures of a card that are tried.
const maxCardSignatures = 8

// VerifyCard checks the agent card raw (its JSON as fetched) against keys:
// at least one of its signatures must be a valid JWS, by a key of keys
// named by its kid, over the card without its signatures in its RFC 8785
// form (as served, or without the empty lists and objects a signer that
// omits default values leaves out). It returns nil or an error wrapping
// [ErrCardSignature] that says why.
func VerifyCard(raw []byte, keys jose.JSONWebKeySet) error {
	var card struct {
		Signatures []sdk.AgentCardSignature `json:"signatures"`
	}
	if err := json.Unmarshal(raw, &card); err != nil {
		return fmt.Errorf("%w: the card is not JSON: %v", ErrCardSignature, err)
	}
	if len(card.Signatures) == 0 {
		return fmt.Errorf("%w: the card is not signed", ErrCardSignature)
	}
	payload, err := canonicalCard(raw)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCardSignature, err)
	}
	payloads := [][]byte{payload}
	if pruned, err := canonicalCard(raw, prune); err == nil && !bytes.Equal(pruned, payload) {
		payloads = append(payloads, pruned)
	}
	var errs []error
	for i, sig := range card.Signatures {
		if i == maxCardSignatures {
			break
		}
		if err := verifySignature(sig, payloads, keys); err != nil {
			errs = append(errs, fmt.Errorf("signature %d: %w", i+1, err))
			continue
		}
		return nil
	}
	return fmt.Errorf("%w: %w", ErrCardSignature, errors.Join(errs...))
}

func verifySignature(sig sdk.AgentCardSignature, payloads [][]byte, keys jose.JSONWebKeySet) error {
	hb, err := base64.RawURLEncoding.DecodeString(sig.Protected)
	if err != nil {
		return fmt.Errorf("protected header: %w", err)
	}
	var h struct {
		Alg, Kid string
	}
	if err := json.Unmarshal(hb, &h); err != nil {
		return fmt.Errorf("protected header: %w", err)
	}
	if !slices.Contains(cardAlgorithms, jose.SignatureAlgorithm(h.Alg)) {
		return fmt.Errorf("algorithm %q is not accepted", h.Alg)
	}
	found := keys.Key(h.Kid)
	if h.Kid == "" || len(found) == 0 {
		return fmt.Errorf("no trusted key with id %q", h.Kid)
	}
	for _, payload := range payloads {
		compact := sig.Protected + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + sig.Signature
		obj, err := jose.ParseSigned(compact, cardAlgorithms)
		if err != nil {
			return fmt.Errorf("JWS: %w", err)
		}
		for _, k := range found {
			if _, err := obj.Verify(k.Public()); err == nil {
				return nil
			}
		}
	}
	return errors.New("invalid signature for the card's content")
}

// canonicalCard returns the RFC 8785 form of the card raw without its
// signatures, after edit (if any) of the decoded card.
func canonicalCard(raw []byte, edit ...func(map[string]any)) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("card: %w", err)
	}
	if v == nil {
		return nil, errors.New("card: not a JSON object")
	}
	delete(v, "signatures")
	for _, e := range edit {
		e(v)
	}
	var b bytes.Buffer
	if err := writeJCS(&b, v, 0); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// requiredCardFields are kept by prune however empty.
var requiredCardFields = []string{"name", "description", "version", "supportedInterfaces", "capabilities", "defaultInputModes", "defaultOutputModes", "skills"}

// prune drops the empty lists and objects below the card's required
// fields, as a signer that omits default values does.
func prune(card map[string]any) {
	for k, v := range card {
		if isEmpty(pruneValue(v)) && !slices.Contains(requiredCardFields, k) {
			delete(card, k)
		}
	}
}

func pruneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if isEmpty(pruneValue(e)) {
				delete(x, k)
			}
		}
	case []any:
		for _, e := range x {
			pruneValue(e)
		}
	}
	return v
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// maxJCSDepth bounds the nesting of canonicalized JSON.
const maxJCSDepth = 64

// writeJCS writes v in the JSON Canonicalization Scheme (RFC 8785):
// object members sorted by the UTF-16 code units of their names, numbers
// as ECMAScript prints them, strings with the minimal escapes.
func writeJCS(b *bytes.Buffer, v any, depth int) error {
	if depth > maxJCSDepth {
		return errors.New("card: JSON nested too deeply")
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("card: number %s cannot be canonicalized", x)
		}
		b.WriteString(esNumber(f))
	case string:
		writeJCSString(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJCS(b, e, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, c string) int { return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(c))) })
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJCSString(b, k)
			b.WriteByte(':')
			if err := writeJCS(b, x[k], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("card: unexpected JSON value %T", v)
	}
	return nil
}

func writeJCSString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// esNumber formats f as ECMAScript's Number.prototype.toString does.
func esNumber(f float64) string {
	if f == 0 {
		return "0"
	}
	if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(s, "e")
	sign := exp[0]
	exp = strings.TrimLeft(exp[1:], "0")
	return mant + "e" + string(sign) + exp
}
