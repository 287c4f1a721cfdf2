package lossless

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// MaxEncodedSize is the largest encoding that fits a configuration record
// payload (the record value's 3,900-byte limit less key, header and route
// targets; docs/records.md).
const MaxEncodedSize = 3700

// Encode returns the profile as single-line flow-style YAML, the compact form
// carried in a configuration record. It fails when the result exceeds
// MaxEncodedSize.
func Encode(p Profile) ([]byte, error) {
	var doc yaml.Node
	if err := doc.Encode(p); err != nil {
		return nil, fmt.Errorf("lossless: encode profile %q: %w", p.Name, err)
	}
	setFlow(&doc)
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return nil, fmt.Errorf("lossless: encode profile %q: %w", p.Name, err)
	}
	if len(out) > MaxEncodedSize {
		return nil, fmt.Errorf("lossless: encoded profile %q is %d bytes, more than %d: drop interface lists or port classes",
			p.Name, len(out), MaxEncodedSize)
	}
	return out, nil
}

// Decode reads what Encode wrote (any YAML profile is accepted).
func Decode(data []byte) (Profile, error) {
	if len(data) > MaxEncodedSize {
		return Profile{}, fmt.Errorf("lossless: encoded profile is %d bytes, more than %d", len(data), MaxEncodedSize)
	}
	return ParseYAML(data)
}

// setFlow puts every collection under n in flow style.
func setFlow(n *yaml.Node) {
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		n.Style = yaml.FlowStyle
	}
	for _, c := range n.Content {
		setFlow(c)
	}
}
