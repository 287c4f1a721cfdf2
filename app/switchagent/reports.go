package switchagent

import (
	"context"

	"github.com/openinof/inof/app/api"
)

// Reports implements api.ReportsBackend: the device records the switch
// holds, with the switch port each names.
func (b switchBackend) Reports(context.Context) ([]api.Device, error) {
	return b.a.table.Reports(), nil
}
