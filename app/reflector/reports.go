package reflector

import (
	"context"
	"fmt"

	"github.com/openinof/inof/app/api"
)

// Reports implements api.ReportsBackend: every client's report of every
// device, with the switch port its record names.
func (b backend) Reports(context.Context) ([]api.Device, error) {
	if err := b.r.Healthy(); err != nil {
		return nil, fmt.Errorf("reflector: %w", err)
	}
	return b.r.fabric.devices.Reports(), nil
}
