package deploy

import (
	"os"

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
