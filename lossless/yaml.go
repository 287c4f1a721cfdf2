package lossless

import (
	"bytes"
	"fmt"

	"gopkg.in/yaml.v3"
)

// ParseYAML reads a profile. Unknown fields are errors, so a misspelt key is
// not silently ignored. It does not validate; call Validate.
func ParseYAML(data []byte) (Profile, error) {
	var p Profile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil {
		return Profile{}, fmt.Errorf("lossless: parse profile: %w", err)
	}
	return p, nil
}

// YAML writes the profile as YAML. The output is deterministic: maps are
// written in key order.
func (p Profile) YAML() ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(p); err != nil {
		return nil, fmt.Errorf("lossless: write profile %q: %w", p.Name, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("lossless: write profile %q: %w", p.Name, err)
	}
	return buf.Bytes(), nil
}
