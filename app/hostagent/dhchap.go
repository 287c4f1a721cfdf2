package hostagent

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/openinof/inof/inof"
)

// NVMeAuth is NVMe in-band authentication (DH-HMAC-CHAP, NVMe TP 8006) for
// one subsystem: the secret the host proves itself with and, for
// bidirectional authentication, the controller's secret, which is what
// tells the real array from a device that registered its NQN
// (docs/security.md, "What a port can claim"). Each is read from its
// file at every connect, so a rotated secret needs no restart.
type NVMeAuth struct {
	// Subsystem is the subsystem NQN the secrets are for.
	Subsystem string `yaml:"subsystem"`
	// HostSecretFile holds the host's secret (DHHC-1:…, as
	// `nvme gen-dhchap-key` prints it): nvme connect --dhchap-secret.
	HostSecretFile string `yaml:"host_secret_file"`
	// CtrlSecretFile, if set, holds the controller's secret:
	// --dhchap-ctrl-secret, the host authenticates the target too.
	CtrlSecretFile string `yaml:"ctrl_secret_file"`
}

// validate reports the problems of one entry (i is its index).
func (n NVMeAuth) validate(i int) []error {
	var errs []error
	if err := inof.ValidateWireNQN(n.Subsystem); err != nil {
		errs = append(errs, fmt.Errorf("nvme.auth[%d].subsystem: %w", i, err))
	}
	if n.HostSecretFile == "" {
		errs = append(errs, fmt.Errorf("nvme.auth[%d].host_secret_file: must be set", i))
	}
	for k, f := range map[string]string{"host_secret_file": n.HostSecretFile, "ctrl_secret_file": n.CtrlSecretFile} {
		if f == "" {
			continue
		}
		if _, err := readSecret(f); err != nil {
			errs = append(errs, fmt.Errorf("nvme.auth[%d].%s: %w", i, k, err))
		}
	}
	return errs
}

// readSecret reads a DH-HMAC-CHAP secret from a file only its owner may
// read: one line "DHHC-1:NN:base64:", nothing a connect's option string
// would read as a separator.
func readSecret(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s: mode %#o: a secret file must not be readable by group or others", path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if !strings.HasPrefix(s, "DHHC-1:") || strings.ContainsAny(s, ", \t\n\r") || len(s) > 512 {
		return "", errors.New(path + ": not a DH-HMAC-CHAP secret (one line DHHC-1:…, as nvme gen-dhchap-key prints)")
	}
	return s, nil
}

// authFor returns the secrets configured for subsystem nqn (none: "").
func authFor(auth []NVMeAuth, nqn string) (host, ctrl string, err error) {
	for _, a := range auth {
		if a.Subsystem != nqn {
			continue
		}
		if host, err = readSecret(a.HostSecretFile); err != nil {
			return "", "", fmt.Errorf("nvme.auth for %s: %w", nqn, err)
		}
		if a.CtrlSecretFile != "" {
			if ctrl, err = readSecret(a.CtrlSecretFile); err != nil {
				return "", "", fmt.Errorf("nvme.auth for %s: %w", nqn, err)
			}
		}
		return host, ctrl, nil
	}
	return "", "", nil
}
