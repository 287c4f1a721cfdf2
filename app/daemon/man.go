package daemon

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/openinof/inof/internal/buildinfo"
)

// ManPagesFlag is the hidden flag of a daemon's root command (Command)
// that writes its manual pages (roff, section 8) into a directory and
// exits: one for the daemon (inofd.8) and one for each subcommand its SEE
// ALSO names (inofd-restore.8, inofd-completion.8, inofd-completion-bash.8,
// ...). The Debian packages (make package) ship them.
const ManPagesFlag = "man-pages"

// writeManPages writes the manual pages of cmd and its subcommands into
// dir, their footers naming the build's version.
func writeManPages(cmd *cobra.Command, dir string) error {
	cmd.DisableAutoGenTag = true
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("manual pages: %w", err)
	}
	hdr := &doc.GenManHeader{Section: "8", Source: "inof " + buildinfo.Read().Version, Manual: "iNOF fabric control plane"}
	if err := doc.GenManTree(cmd, hdr, dir); err != nil {
		return fmt.Errorf("manual pages: %w", err)
	}
	return nil
}

// addManPagesFlag gives cmd the hidden --man-pages flag; run is the root's
// RunE, called when the flag is not set.
func addManPagesFlag(cmd *cobra.Command, run func(*cobra.Command, []string) error) func(*cobra.Command, []string) error {
	dir := cmd.Flags().String(ManPagesFlag, "", "write the manual pages (roff) into this directory and exit")
	_ = cmd.Flags().MarkHidden(ManPagesFlag)
	return func(c *cobra.Command, args []string) error {
		if *dir != "" {
			return writeManPages(c, *dir)
		}
		return run(c, args)
	}
}
