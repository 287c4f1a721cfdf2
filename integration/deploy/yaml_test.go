package deploy

import (
	"encoding/json"
	"os"
	"slices"

	"gopkg.in/yaml.v3"
)

// readYAML decodes a YAML file into v.
func readYAML(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return yaml.Unmarshal(b, v)
}

// hasZone reports whether `inofctl zone list -o json` shows the zone with
// these members.
func hasZone(out, name string, members ...string) bool {
	var zl struct {
		Zones []struct {
			Name    string   `json:"name"`
			Members []string `json:"members"`
		} `json:"zones"`
	}
	if json.Unmarshal([]byte(out), &zl) != nil {
		return false
	}
	for _, z := range zl.Zones {
		if z.Name == name && slices.Equal(z.Members, members) {
			return true
		}
	}
	return false
}
