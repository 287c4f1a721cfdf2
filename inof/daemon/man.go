package daemon

import (
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/openinof/inof/internal/buildinfo"
)

// ManPageFlag is the hidden flag of a daemon's root command (Command) that
// prints its manual page (roff, section 8) and exits: the Debian packages
// (make package) ship it as man inofd / man inof-host.
const ManPageFlag = "man-page"

// writeManPage writes cmd's manual page in section 8 (system daemons).
func writeManPage(cmd *cobra.Command, w io.Writer) error {
	cmd.DisableAutoGenTag = true
	return doc.GenMan(cmd, &doc.GenManHeader{Section: "8", Source: "inof " + buildinfo.Read().Version,
		Manual: "iNOF fabric control plane"}, w)
}

// addManPageFlag gives cmd the hidden --man-page flag; run is the root's
// RunE, called when the flag is not set.
func addManPageFlag(cmd *cobra.Command, run func(*cobra.Command, []string) error) func(*cobra.Command, []string) error {
	man := cmd.Flags().Bool(ManPageFlag, false, "print the manual page (roff) and exit")
	_ = cmd.Flags().MarkHidden(ManPageFlag)
	return func(c *cobra.Command, args []string) error {
		if *man {
			return writeManPage(c, c.OutOrStdout())
		}
		return run(c, args)
	}
}
