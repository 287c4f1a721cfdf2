package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/openinof/inof/app/api/apiclient"
)

// tokenCmds are the commands of inofctl token.
type tokenCmds struct{ *app }

// tokenCommand manages the named tokens of a reflector's api.tokens_file,
// on the reflector's host: no server is involved (docs/security.md).
func (a tokenCmds) tokenCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Issue and revoke named API tokens (edits a tokens file; no server needed)"}
	var file, role string
	issue := &cobra.Command{Use: "new NAME", Short: "Make a token for NAME: prints it once and adds its hash to --file",
		Long: "Makes a random token for NAME with --role, prints the token (give it to its holder: it is\n" +
			"shown only now) and adds its SHA-256 to the tokens file, which the reflector reads again\n" +
			"at its next call (api.tokens_file).",
		Example: "  inofctl token new alice --role admin --file /etc/inof/api-tokens.yaml > alice.token",
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if role != "admin" && role != "viewer" {
				return fmt.Errorf("--role %q: want admin or viewer", role)
			}
			tok, err := apiclient.NewToken()
			if err != nil {
				return runError{err}
			}
			if err := editTokens(file, func(f *apiclient.TokensFile) error {
				if slices.ContainsFunc(f.Tokens, func(e apiclient.TokenEntry) bool { return e.Name == args[0] }) {
					return fmt.Errorf("%s already has a token in %s: revoke it first", args[0], file)
				}
				f.Tokens = append(f.Tokens, apiclient.TokenEntry{Name: args[0], Role: role, SHA256: apiclient.HashToken(tok)})
				return nil
			}); err != nil {
				return runError{err}
			}
			fmt.Fprintln(a.io.Out, tok)
			fmt.Fprintf(a.io.Err, "token of %s (%s) added to %s\n", args[0], role, file)
			return nil
		}}
	issue.Flags().StringVar(&role, "role", "viewer", "admin (read and change) or viewer (read only)")
	revoke := &cobra.Command{Use: "revoke NAME", Short: "Remove NAME's token from --file: the reflector refuses it at once",
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := editTokens(file, func(f *apiclient.TokensFile) error {
				n := len(f.Tokens)
				f.Tokens = slices.DeleteFunc(f.Tokens, func(e apiclient.TokenEntry) bool { return e.Name == args[0] })
				if len(f.Tokens) == n {
					return fmt.Errorf("%s has no token in %s", args[0], file)
				}
				return nil
			}); err != nil {
				return runError{err}
			}
			fmt.Fprintf(a.io.Err, "token of %s revoked in %s\n", args[0], file)
			return nil
		}}
	for _, c := range []*cobra.Command{issue, revoke} {
		c.Flags().StringVar(&file, "file", "/etc/inof/api-tokens.yaml", "the tokens `FILE` (api.tokens_file)")
	}
	cmd.AddCommand(issue, revoke)
	return group(cmd)
}

// editTokens reads the tokens file (none yet is an empty one), applies
// edit and writes it back with mode 0600 through a new temporary file
// (createExclusive), so the reflector never reads half a file.
func editTokens(path string, edit func(*apiclient.TokensFile) error) error {
	var f apiclient.TokensFile
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	default:
		if f, err = apiclient.ParseTokensFile(b); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if err := edit(&f); err != nil {
		return err
	}
	out, err := yaml.Marshal(f)
	if err != nil {
		return err
	}
	tmp, err := createExclusive(path, 0o600)
	if err != nil {
		return err
	}
	o := &outFile{Writer: tmp, path: path, tmp: tmp}
	defer o.abort()
	if _, err := o.Write(out); err != nil {
		return err
	}
	return o.commit()
}
