package readback

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// SysfsNet is where Linux exposes network devices.
const SysfsNet = "/sys/class/net"

// ReadECN reads the given files under <root>/<ifname>/ecn (paths as in
// lossless.SysfsSetting). Files that do not exist are left out of the result;
// a file that exists but does not hold an unsigned number is an error.
func ReadECN(root, ifname string, paths []string) (map[string]uint32, error) {
	out := make(map[string]uint32, len(paths))
	for _, p := range paths {
		file := filepath.Join(root, ifname, "ecn", p)
		data, err := os.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("readback: %w", err)
		}
		v, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("readback: %s: %w", file, err)
		}
		out[p] = uint32(v)
	}
	return out, nil
}
