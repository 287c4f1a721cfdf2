package apiclient

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// Named tokens (docs/security.md): a reflector's api.tokens_file lists, per
// admin or viewer, the SHA-256 of a token; the token itself is known only
// to its holder. `inofctl token new` makes one.

// TokenEntry is one entry of a tokens file.
type TokenEntry struct {
	Name   string `yaml:"name"`
	Role   string `yaml:"role"`   // admin or viewer
	SHA256 string `yaml:"sha256"` // hex SHA-256 of the token
}

// TokensFile is the YAML document of api.tokens_file.
type TokensFile struct {
	Tokens []TokenEntry `yaml:"tokens"`
}

// HashToken returns the hex SHA-256 of a token, as a tokens file holds it.
func HashToken(token string) string {
	s := sha256.Sum256([]byte(token))
	return hex.EncodeToString(s[:])
}

// NewToken returns a fresh random token (256 bits, URL-safe base64).
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// ParseTokensFile decodes and checks a tokens file: unknown keys, an entry
// without a name, a role other than admin or viewer, a hash that is not 64
// hex digits, or a name used twice are errors. An empty file holds no
// tokens.
func ParseTokensFile(b []byte) (TokensFile, error) {
	var f TokensFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return TokensFile{}, err
	}
	names := map[string]bool{}
	for i, e := range f.Tokens {
		h := strings.ToLower(e.SHA256)
		if _, err := hex.DecodeString(h); err != nil || len(h) != 64 {
			return TokensFile{}, fmt.Errorf("tokens[%d] (%s): sha256 must be 64 hex digits", i, e.Name)
		}
		if e.Name == "" || names[e.Name] {
			return TokensFile{}, fmt.Errorf("tokens[%d]: a name, once per file", i)
		}
		if e.Role != "admin" && e.Role != "viewer" {
			return TokensFile{}, fmt.Errorf("tokens[%d] (%s): role %q: want admin or viewer", i, e.Name, e.Role)
		}
		names[e.Name] = true
		f.Tokens[i].SHA256 = h
	}
	return f, nil
}
