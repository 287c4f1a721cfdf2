package api_test

import (
	"strings"
	"testing"

	"github.com/openinof/inof/app/api"
)

// TestConsoleListenNeedsTLSAndIdentities: the console is never served in
// plaintext nor to unknown callers, and not without a console.
func TestConsoleListenNeedsTLSAndIdentities(t *testing.T) {
	for _, o := range []api.Options{
		{ConsoleListen: "127.0.0.1:9443"},
		{ConsoleListen: "127.0.0.1:9443", TLSCert: "c.pem", TLSKey: "k.pem"},
		{ConsoleListen: "9443", TLSCert: "c.pem", TLSKey: "k.pem", TokensFile: "t.yaml"},
	} {
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), "api.console_listen") {
			t.Errorf("%+v: %v, want an api.console_listen error", o, err)
		}
	}
	ok := api.Options{ConsoleListen: "127.0.0.1:9443", TLSCert: "c.pem", TLSKey: "k.pem", TokensFile: "t.yaml"}
	if err := ok.Validate(); err != nil {
		t.Errorf("%+v: %v", ok, err)
	}
	if !ok.Enabled() || ok.ServeOptions(false, nil, nil).ConsoleListen != ok.ConsoleListen {
		t.Error("a console-only API is not served")
	}
	dir := t.TempDir()
	_, cert, key, token := tlsFiles(t, dir)
	if _, err := api.NewServer(api.ServeOptions{ConsoleListen: "127.0.0.1:0", TLSCertFile: cert, TLSKeyFile: key, TokenFile: token}, nil); err == nil ||
		!strings.Contains(err.Error(), "without a console") {
		t.Errorf("a console address without a console handler: %v", err)
	}
}
